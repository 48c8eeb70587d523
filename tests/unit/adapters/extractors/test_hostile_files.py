"""Hostile files of each new format (issue 37) meet the native extractors: each one is refused with
a named failure that says why (``DocumentUnreadable``, ``TooLarge``) or read bounded with a note,
never an unnamed exception and never unbounded memory or time. The pipeline side (the document ends
``failed`` with the reason, the process goes on) is tests/integration/test_hostile_formats.py."""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage

import pytest

from memory_engine.adapters.extractors import containers, native_extractors
from memory_engine.domain import content_types as ct
from memory_engine.domain.ingestion_errors import DocumentUnreadable, IngestionFailure, TooLarge
from memory_engine.domain.sniffing import CFB_MAGIC
from memory_engine.ports.extractors import Extracted
from tests.support import hostile, office

EXTRACTORS = native_extractors()
#: format -> the member a bomb hides in (the part the extractor must read)
CONTAINERS = {ct.DOCX: "word/document.xml", ct.PPTX: "ppt/presentation.xml", ct.XLSX: "xl/workbook.xml",
              ct.ODT: "content.xml", ct.EPUB: "META-INF/container.xml"}


def _consume(content_type: str, data: bytes) -> Extracted:
    produced = EXTRACTORS[content_type].pages(data, name="hostile")
    assert isinstance(produced, Extracted)
    list(produced)
    return produced


@pytest.mark.parametrize("content_type", sorted(CONTAINERS))
def test_a_zip_bomb_in_any_container_is_refused_as_a_bomb(content_type: str) -> None:
    # Given a container whose main part inflates 1000 times (64 MB from 64 KB)
    data = hostile.zip_bomb(content_type, CONTAINERS[content_type])
    assert len(data) < 200_000
    # Then reading it stops early with TooLarge naming the bomb
    with pytest.raises(TooLarge, match="zip bomb"):
        _consume(content_type, data)


def test_a_part_under_the_ratio_is_still_stopped_by_the_inflated_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the limits scaled down, and a .docx whose body compresses only a little but inflates past them
    monkeypatch.setattr(containers, "MAX_TOTAL_BYTES", 3 * 2**20)
    monkeypatch.setattr(containers, "MAX_MEMBER_BYTES", 2 * 2**20)
    text = "".join(f"<w:p><w:r><w:t>row {i} of the ledger {i * 7919 % 104729}</w:t></w:r></w:p>" for i in range(60_000))
    data = office.docx(text)
    with pytest.raises(TooLarge, match="inflates past 2 MB"):
        _consume(ct.DOCX, data)


@pytest.mark.parametrize("content_type", sorted(CONTAINERS))
def test_a_truncated_container_is_unreadable_and_says_it_is_damaged(content_type: str) -> None:
    data = hostile.valid(content_type)
    _consume(content_type, data)  # the whole file reads
    with pytest.raises(DocumentUnreadable, match="damaged"):
        _consume(content_type, data[: len(data) * 2 // 3])


@pytest.mark.parametrize("content_type", [ct.DOCX, ct.PPTX, ct.XLSX])
def test_a_password_protected_office_file_says_to_remove_the_password(content_type: str) -> None:
    with pytest.raises(DocumentUnreadable, match="password-protected"):
        _consume(content_type, hostile.encrypted_office())


def test_a_legacy_binary_office_file_says_to_save_it_in_the_current_format() -> None:
    with pytest.raises(DocumentUnreadable, match="legacy"):
        _consume(ct.DOCX, CFB_MAGIC + b"\x00" * 4000)


@pytest.mark.parametrize("content_type", sorted(CONTAINERS))
def test_entity_expansion_in_a_part_is_refused(content_type: str) -> None:
    data = office.zip_parts({"mimetype": content_type, "[Content_Types].xml": office.CONTENT_TYPES,
                             CONTAINERS[content_type]: hostile.BILLION_LAUGHS}, stored_first="mimetype")
    with pytest.raises(DocumentUnreadable, match="entities"):
        _consume(content_type, data)


def test_an_encrypted_zip_member_is_refused() -> None:
    data = bytearray(office.docx("<w:p><w:r><w:t>secret</w:t></w:r></w:p>"))
    # set the "encrypted" flag of every member in the central directory
    position = data.find(b"PK\x01\x02")
    while position != -1:
        data[position + 8] |= 0x1
        position = data.find(b"PK\x01\x02", position + 4)
    with pytest.raises(DocumentUnreadable, match="encrypted"):
        _consume(ct.DOCX, bytes(data))


def test_a_container_missing_its_main_part_names_it() -> None:
    data = office.zip_parts({"[Content_Types].xml": office.CONTENT_TYPES, "word/other.xml": "<x/>"})
    with pytest.raises(DocumentUnreadable, match="word/document.xml is missing"):
        _consume(ct.DOCX, data)


def test_a_container_of_too_many_members_is_refused_before_reading_them() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for i in range(containers.MAX_MEMBERS + 1):
            archive.writestr(f"m/{i}", b"")
    with pytest.raises(TooLarge, match="files in its container"):
        _consume(ct.DOCX, buffer.getvalue())


def test_a_sheet_of_a_million_cells_is_read_bounded_with_a_note() -> None:
    # Given a workbook of one sheet, 100,000 rows of 10 cells under a header
    data = hostile.million_cell_xlsx()
    # Then it is read up to the cell limit, and the reader and the document's notes say so
    produced = EXTRACTORS[ct.XLSX].pages(data, name="big.xlsx")
    assert isinstance(produced, Extracted)
    pages = [page.text for page in produced]
    assert "Amount: 20" in pages[0]
    assert pages[-1].rstrip().endswith("were read)") and "bounded" in pages[-1]
    assert any("200,000 cells" in note for note in produced.info.notes)
    assert sum(len(text) for text in pages) < 5_000_000


def test_a_sheet_of_numbers_without_a_header_is_read_row_by_row() -> None:
    rows = "".join(f'<row r="{i}"><c r="A{i}"><v>{i}</v></c><c r="B{i}"><v>{i * 7}</v></c></row>' for i in range(1, 4))
    pages = [page.text for page in EXTRACTORS[ct.XLSX].pages(office.xlsx({"Numbers": rows}), name="n")]
    assert "1 | 7" in pages[0] and "3 | 21" in pages[0]


def test_html_of_50_mb_is_read_bounded_with_notes() -> None:
    # Given a 50 MB page, almost all of it an inline script, its article at the start
    produced = EXTRACTORS[ct.HTML].pages(hostile.huge_html(50_000_000), name="huge.html")
    assert isinstance(produced, Extracted)
    text = "\n".join(page.text for page in produced)
    # Then the article is read, the script is not, and the notes say the page was cut
    assert "Snow falls on the long fjord" in text and "AAAA" not in text
    assert any("only the first 8,000,000" in note for note in produced.info.notes)


def test_an_e_mail_nested_thousands_of_parts_deep_is_unreadable_not_a_crash() -> None:
    with pytest.raises(IngestionFailure):
        _consume(ct.EML, hostile.deeply_nested_email(5000))


def test_an_e_mail_with_thousands_of_attachments_lists_a_bounded_number() -> None:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "a@example.com", "b@example.com", "Many files"
    message.set_content("See the attached files.")
    for i in range(1200):
        message.add_attachment(b"x", maintype="application", subtype="octet-stream", filename=f"f{i}.bin")
    produced = _consume(ct.EML, message.as_bytes())
    assert len(produced.info.properties["email"].get("attachments", [])) <= 500


def test_json_nested_a_hundred_thousand_deep_is_unreadable_not_a_recursion_crash() -> None:
    with pytest.raises(DocumentUnreadable, match="nests deeper"):
        _consume(ct.JSON, b"[" * 100_000 + b"]" * 100_000)


def test_csv_of_more_cells_than_the_limit_is_bounded_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_engine.adapters.extractors import structured

    monkeypatch.setattr(structured, "MAX_CELLS", 1000)
    data = ("id,name\n" + "".join(f"{i},item {i}\n" for i in range(5000))).encode()
    produced = _consume(ct.CSV, data)
    assert any("1,000 cells" in note for note in produced.info.notes)
