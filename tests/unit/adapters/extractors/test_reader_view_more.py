"""More of what a reader sees (issue 37), in the structures the first batch of files does not
hold: moved text, fields' shown results, content controls, text boxes, hidden and grouped slides,
headers spanning rows, long sheets, non-linear chapters, alternative and forwarded e-mail parts."""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage

from memory_engine.adapters.extractors import native_extractors
from memory_engine.domain import content_types as ct
from tests.support import office
from tests.support.office import shape

EXTRACTORS = native_extractors()


def _pages(content_type: str, data: bytes) -> list[tuple[int | None, str]]:
    return [(p.number, p.text) for p in EXTRACTORS[content_type].pages(data, name="file")]


def _text(content_type: str, data: bytes) -> str:
    return "\n\n".join(text for _, text in _pages(content_type, data))


def _rewrite(data: bytes, member: str, old: str, new: str, *, stored_first: str | None = None) -> bytes:
    """``data`` (a zip) with ``old`` replaced by ``new`` once in ``member``."""
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        parts: dict[str, str | bytes] = {name: source.read(name) for name in source.namelist()}
        text = source.read(member).decode()
    assert old in text
    parts[member] = text.replace(old, new, 1)
    return office.zip_parts(parts, stored_first=stored_first)


def _run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{text}</w:t></w:r>'


def test_docx_shows_moved_text_once_field_results_content_controls_and_text_boxes() -> None:
    body = ("<w:p>" + _run("Meet ") + '<w:moveFrom w:id="1">' + _run("tomorrow ") + "</w:moveFrom>"
            + _run("at the pier ") + '<w:moveTo w:id="2">' + _run("tomorrow") + "</w:moveTo>" + _run(".") + "</w:p>"
            + '<w:p><w:fldSimple w:instr=" DATE \\@ &quot;d MMMM&quot; ">' + _run("4 December") + "</w:fldSimple>"
            + '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> HYPERLINK "https://x.example" </w:instrText>'
            '</w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>' + _run(" the harbour site")
            + '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
            + "<w:sdt><w:sdtContent><w:p>" + _run("Signed by the harbour master") + "</w:p></w:sdtContent></w:sdt>"
            + '<w:p><w:r><w:pict><w:txbxContent><w:p>' + _run("Tide table inside a text box")
            + "</w:p></w:txbxContent></w:pict></w:r></w:p>")
    text = _text(ct.DOCX, office.docx(body))
    assert "Meet at the pier tomorrow." in text and text.count("tomorrow") == 1
    assert "4 December the harbour site" in text and "HYPERLINK" not in text and "DATE" not in text
    assert "Signed by the harbour master" in text and "Tide table inside a text box" in text


def test_pptx_hidden_slide_marked_and_grouped_shapes_read() -> None:
    group = f"<p:grpSp>{shape('Grouped label')}{shape('Another in the group')}</p:grpSp>"
    data = office.pptx([(shape("Visible", "title") + group, ""), (shape("Secret plan", "title"), "")])
    pages = _pages(ct.PPTX, _rewrite(data, "ppt/slides/slide2.xml", "<p:sld ", '<p:sld show="0" '))
    assert "Grouped label" in pages[0][1] and "Another in the group" in pages[0][1]
    assert "(hidden slide)" in pages[1][1] and "Secret plan" in pages[1][1]
    assert "(hidden slide)" not in pages[0][1]


def test_xlsx_header_spanning_two_rows_names_every_column() -> None:
    def cell(ref: str, text: str) -> str:
        return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'

    rows = (f'<row r="1">{cell("A1", "Port")}{cell("B1", "Arrivals")}</row>'
            f'<row r="2">{cell("B2", "Ferries")}{cell("C2", "Cargo")}</row>'
            f'<row r="3">{cell("A3", "Bergen")}<c r="B3"><v>12</v></c><c r="C3"><v>30</v></c></row>')
    text = _text(ct.XLSX, office.xlsx({"Ports": rows}))
    assert "Port: Bergen; Ferries: 12; Cargo: 30" in text


def test_xlsx_long_sheet_continues_on_pages_that_repeat_the_sheet_and_its_columns() -> None:
    rows = ('<row r="1"><c r="A1" t="inlineStr"><is><t>Ship</t></is></c>'
            '<c r="B1" t="inlineStr"><is><t>Tonnage</t></is></c></row>'
            + "".join(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>vessel number {i} of the northern fleet</t></is>'
                      f'</c><c r="B{i}"><v>{i * 100}</v></c></row>' for i in range(2, 400)))
    pages = _pages(ct.XLSX, office.xlsx({"Fleet": rows}))
    assert len(pages) > 2 and {number for number, _ in pages} == {1}
    for _, text in pages:
        assert text.startswith("## Sheet: Fleet") and "Columns: Ship | Tonnage" in text
    assert "Ship: vessel number 399 of the northern fleet; Tonnage: 39900" in pages[-1][1]


def test_epub_non_linear_items_come_after_the_reading_order() -> None:
    data = office.epub({"notes.xhtml": "<h1>Notes</h1><p>Endnote text.</p>",
                        "one.xhtml": "<h1>One</h1><p>First chapter.</p>",
                        "two.xhtml": "<h1>Two</h1><p>Second chapter.</p>"},
                       spine=["notes.xhtml", "one.xhtml", "two.xhtml"])
    data = _rewrite(data, "OEBPS/content.opf", '<itemref idref="notes.xhtml"/>',
                    '<itemref idref="notes.xhtml" linear="no"/>', stored_first="mimetype")
    pages = _pages(ct.EPUB, data)
    assert [text.split("\n")[0] for _, text in pages] == ["# One", "# Two", "# Notes"]


def test_eml_prefers_the_plain_alternative_and_reads_a_forwarded_message_after_the_body() -> None:
    forwarded = EmailMessage()
    forwarded["From"], forwarded["To"], forwarded["Subject"] = "pier@example.com", "ana@example.com", "Tides"
    forwarded.set_content("High tide at 14:05 on Friday.")
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ana@example.com", "ops@example.com", "Fwd: Tides"
    message.set_content("See the tides below.")
    message.add_alternative("<html><body><p>HTML version of the note.</p></body></html>", subtype="html")
    message.add_attachment(forwarded)
    text = _text(ct.EML, message.as_bytes())
    assert "See the tides below." in text and "HTML version" not in text
    assert text.index("See the tides below.") < text.index("High tide at 14:05 on Friday.")
    assert "Subject: Tides" in text


def test_html_table_rows_with_their_header_and_the_title_as_first_heading() -> None:
    rows = "".join(f"<tr><td>Route {i}</td><td>{i * 10} min</td></tr>" for i in range(1, 4))
    page = ("<html><head><title>Ferry times</title></head><body><main>"
            + "<p>Ferries leave the northern harbour every day of the year, weather permitting, from dawn.</p>" * 8
            + f"<table><tr><th>Route</th><th>Duration</th></tr>{rows}</table></main></body></html>").encode()
    text = _text(ct.HTML, page)
    assert text.startswith("# Ferry times")
    assert "Route: Route 2; Duration: 20 min" in text
