"""A file's content type from its bytes (issue 37): zip containers by their manifest, signatures,
text by how it starts; the bytes win over the declaration and the extension, and the difference
is reported so Register records it."""

from __future__ import annotations

import pytest

from memory_engine.domain import content_types as ct
from memory_engine.domain.sniffing import CFB_MAGIC, Detection, detect, sniff
from tests.support import hostile, office

CONTAINERS = [ct.DOCX, ct.PPTX, ct.XLSX, ct.ODT, ct.EPUB]


@pytest.mark.parametrize("content_type", CONTAINERS)
def test_each_container_is_told_by_its_manifest_whatever_its_name(content_type: str) -> None:
    data = hostile.valid(content_type)
    assert sniff(data) == content_type
    assert detect("/f/file.bin", None, data) == Detection(content_type, declared=None)
    assert detect("/f/file.zip", "application/octet-stream", data).content_type == content_type


def test_a_docx_declared_as_pdf_is_word_and_the_declaration_is_reported() -> None:
    assert detect("/paper.pdf", "application/pdf", hostile.valid(ct.DOCX)) == Detection(ct.DOCX, declared=ct.PDF)


def test_a_docx_with_its_extension_and_a_generic_declaration_reports_no_mismatch() -> None:
    assert detect("/a.docx", "application/octet-stream", hostile.valid(ct.DOCX)) == Detection(ct.DOCX)


def test_a_pdf_named_docx_is_a_pdf() -> None:
    assert detect("/a.docx", None, b"%PDF-1.7\n...") == Detection(ct.PDF, declared=ct.DOCX)


def test_a_zip_that_is_no_office_file_keeps_the_declared_office_type_so_its_reader_says_what_is_missing() -> None:
    plain_zip = office.zip_parts({"notes.txt": "hello"})
    assert sniff(plain_zip) == ct.ZIP
    assert detect("/a.docx", None, plain_zip) == Detection(ct.DOCX)


@pytest.mark.parametrize("data", [CFB_MAGIC + b"\x00" * 600, hostile.encrypted_office()])
def test_an_ole2_file_named_docx_stays_word_so_the_reader_says_legacy_or_password(data: bytes) -> None:
    assert detect("/locked.docx", None, data) == Detection(ct.DOCX)


def test_a_damaged_zip_named_xlsx_stays_excel() -> None:
    data = hostile.valid(ct.XLSX)
    assert detect("/broken.xlsx", None, data[: len(data) // 2]) == Detection(ct.XLSX)


@pytest.mark.parametrize(("data", "expected"), [
    (b"<!DOCTYPE html><html><body>x</body></html>", ct.HTML),
    (b"\xef\xbb\xbf  <!-- c --> <html lang=en>", ct.HTML),
    (b'  {"a": 1}', ct.JSON),
    (b"From: a@example.com\nTo: b@example.com\nSubject: hi\n\nbody", ct.EML),
    (b"From a@example.com Thu Jan  1 00:00:00 2024\nFrom: a@example.com\nDate: Mon, 1 Jan 2024\n\nx", ct.EML),
])
def test_text_without_a_name_or_type_is_told_by_how_it_starts(data: bytes, expected: str) -> None:
    assert detect("/upload", None, data).content_type == expected


def test_a_declared_text_type_is_kept_even_when_the_text_is_html() -> None:
    assert detect("/notes.txt", "text/plain", b"<html><body>x</body></html>") == Detection(ct.TEXT)
    assert detect("/notes.txt", None, b"<html><body>x</body></html>") == Detection(ct.TEXT)


def test_html_saved_as_docx_is_read_as_html_and_reported() -> None:
    assert detect("/page.docx", None, b"<html><head><title>t</title></head></html>") == Detection(ct.HTML,
                                                                                                   declared=ct.DOCX)


def test_aliases_of_native_types_are_the_native_type() -> None:
    assert detect("/p", "application/xhtml+xml; charset=utf-8", b"<p>x</p>") == Detection(ct.HTML)
    assert detect("/d", "text/comma-separated-values", b"a,b\n1,2") == Detection(ct.CSV)


def test_binary_without_signature_and_a_generic_type_falls_back_to_the_extension() -> None:
    assert detect("/x.csv", "application/octet-stream", b"a,b\n1,2\n") == Detection(ct.CSV)
    assert detect("/x.bin", None, b"\x00\x01\x02") == Detection("application/octet-stream")
