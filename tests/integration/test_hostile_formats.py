"""Hostile files of each format read natively since issue 37, through the whole pipeline (register ->
extract -> chunk -> embed -> finalize / mark_failed): each ends ``failed`` with a reason that says
what is wrong, or ``ready`` bounded with a note recorded on the document, and the ingestion process
goes on to read the next file. The extractor-level checks are
tests/unit/adapters/extractors/test_hostile_files.py; the PDF ones tests/integration/test_ingestion_pipeline.py."""

from __future__ import annotations

from typing import Any

import pytest

from memory_engine.adapters.extractors import xlsx
from memory_engine.bootstrap import Container
from memory_engine.domain import content_types as ct
from tests.support import hostile, office
from tests.support.ingestion import upload_and_ingest

EXTENSIONS = {ct.DOCX: "docx", ct.PPTX: "pptx", ct.XLSX: "xlsx", ct.ODT: "odt", ct.EPUB: "epub"}


@pytest.fixture(scope="module")
def project_id(container: Container) -> str:
    return container.projects.get_or_create_project("acme").id


def _ingest(container: Container, project_id: str, path: str, data: bytes) -> tuple[Any, list[str]]:
    result = upload_and_ingest(container, project_id, path, data)
    doc = container.documents.find_by_path(project_id, path)
    assert doc is not None
    assert result.status == ("failed" if doc.status.value == "failed" else "succeeded"), (result, doc.error)
    with container.database.connection() as conn:
        rows = conn.execute("SELECT c.content FROM document_chunks c JOIN documents d ON d.id = c.document_id"
                            " WHERE c.document_id = %s AND c.generation = d.active_generation ORDER BY c.chunk_index",
                            (doc.id,)).fetchall()
    return doc, [row["content"] for row in rows]


def _failed_saying(container: Container, project_id: str, path: str, data: bytes, *words: str) -> None:
    doc, chunks = _ingest(container, project_id, path, data)
    assert doc.status.value == "failed", doc
    assert doc.error and all(word.lower() in doc.error.lower() for word in words), doc.error
    assert chunks == []


@pytest.mark.parametrize("content_type", sorted(EXTENSIONS))
def test_a_truncated_container_of_each_format_fails_as_damaged(container: Container, project_id: str,
                                                              content_type: str) -> None:
    data = hostile.valid(content_type)
    _failed_saying(container, project_id, f"/hostile/truncated.{EXTENSIONS[content_type]}",
                   data[: len(data) * 2 // 3], "damaged")


@pytest.mark.parametrize("content_type", sorted(EXTENSIONS))
def test_a_zip_bomb_disguised_as_each_format_fails_as_a_zip_bomb(container: Container, project_id: str,
                                                                content_type: str) -> None:
    member = {ct.DOCX: "word/document.xml", ct.PPTX: "ppt/presentation.xml", ct.XLSX: "xl/workbook.xml",
              ct.ODT: "content.xml", ct.EPUB: "META-INF/container.xml"}[content_type]
    _failed_saying(container, project_id, f"/hostile/bomb.{EXTENSIONS[content_type]}",
                   hostile.zip_bomb(content_type, member), "zip bomb")


@pytest.mark.parametrize("extension", ["docx", "xlsx", "pptx"])
def test_a_password_protected_office_file_fails_saying_to_remove_the_password(container: Container, project_id: str,
                                                                               extension: str) -> None:
    _failed_saying(container, project_id, f"/hostile/locked.{extension}", hostile.encrypted_office(),
                   "password-protected")


def test_entity_expansion_in_a_docx_fails_as_refused(container: Container, project_id: str) -> None:
    data = office.zip_parts({"[Content_Types].xml": office.CONTENT_TYPES, "word/document.xml": hostile.BILLION_LAUGHS})
    _failed_saying(container, project_id, "/hostile/laughs.docx", data, "entities")


def test_an_e_mail_nested_thousands_deep_fails_as_unreadable(container: Container, project_id: str) -> None:
    _failed_saying(container, project_id, "/hostile/deep.eml", hostile.deeply_nested_email(2000), "e-mail")


def test_an_xlsx_of_a_million_cells_is_ready_bounded_with_a_note(container: Container, project_id: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the cell limit scaled down (so the test embeds a few chunks, not 650) and a million cells
    monkeypatch.setattr(xlsx, "MAX_CELLS", 5000)
    doc, chunks = _ingest(container, project_id, "/hostile/million.xlsx", hostile.million_cell_xlsx())
    # Then it is ready with the rows up to the limit, and the text and the document say it was bounded
    assert doc.status.value == "ready", doc.error
    text = "\n".join(chunks)
    assert "Item: item 2; Amount: 20" in text and "Item: item 450;" in text and "item 550;" not in text
    assert "bounded: only the first 5,000 cells" in text
    assert any("5,000 cells" in note for note in doc.metadata["extracted"]["notes"])


def test_an_html_page_of_50_mb_is_ready_bounded_with_a_note(container: Container, project_id: str) -> None:
    doc, chunks = _ingest(container, project_id, "/hostile/huge.html", hostile.huge_html(50_000_000))
    assert doc.status.value == "ready", doc.error
    assert any("Snow falls on the long fjord" in chunk for chunk in chunks)
    assert not any("AAAA" in chunk for chunk in chunks)
    assert any("only the first 8,000,000" in note for note in doc.metadata["extracted"]["notes"])
    assert doc.title == "Fjords"


def test_after_the_hostile_files_the_next_ordinary_file_is_read(container: Container, project_id: str) -> None:
    # Given every hostile file above went through this process, an ordinary Word file still ingests
    _failed_saying(container, project_id, "/hostile/bomb-again.docx",
                   hostile.zip_bomb(ct.DOCX, "word/document.xml"), "zip bomb")
    doc, chunks = _ingest(container, project_id, "/hostile/after.docx",
                          office.docx("<w:p><w:r><w:t>The harbour opens at dawn.</w:t></w:r></w:p>"))
    assert doc.status.value == "ready" and chunks == ["The harbour opens at dawn."]
