"""The native extractors read a file the way a reader sees it (issue 37): files written here from
their XML parts state exactly the structure checked, so the checks do not depend on how the dev
files happen to be built."""

from __future__ import annotations

from email.message import EmailMessage

from memory_engine.adapters.extractors import native_extractors
from memory_engine.domain import content_types as ct
from memory_engine.ports.extractors import Extracted
from tests.support import office
from tests.support.office import shape

EXTRACTORS = native_extractors()


def _read(content_type: str, data: bytes) -> tuple[list[tuple[int | None, str]], Extracted]:
    produced = EXTRACTORS[content_type].pages(data, name="file")
    assert isinstance(produced, Extracted)
    return [(p.number, p.text) for p in produced], produced


def _text(content_type: str, data: bytes) -> str:
    return "\n\n".join(text for _, text in _read(content_type, data)[0])


def _p(text: str, style: str = "", extra: str = "") -> str:
    props = f'<w:pPr><w:pStyle w:val="{style}"/>{extra}</w:pPr>' if style or extra else ""
    return f"<w:p>{props}<w:r><w:t>{text}</w:t></w:r></w:p>"


def test_docx_headings_by_style_name_tracked_changes_final_comments_out_headers_once() -> None:
    styles = ('<w:style w:type="paragraph" w:styleId="1"><w:name w:val="heading 1"/></w:style>'
              '<w:style w:type="paragraph" w:styleId="Custom"><w:name w:val="Fancy"/><w:basedOn w:val="1"/></w:style>'
              '<w:style w:type="paragraph" w:styleId="Outline"><w:name w:val="Chapter"/>'
              '<w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>')
    body = (_p("Results", "1") + _p("Inherited heading", "Custom") + _p("Outlined heading", "Outline")
            + '<w:p><w:r><w:t xml:space="preserve">The fleet has </w:t></w:r>'
            '<w:del w:id="1"><w:r><w:delText>nine</w:delText></w:r></w:del>'
            '<w:ins w:id="2"><w:r><w:t>twelve</w:t></w:r></w:ins>'
            '<w:commentRangeStart w:id="5"/><w:r><w:t xml:space="preserve"> ships.</w:t></w:r>'
            '<w:commentRangeEnd w:id="5"/><w:r><w:commentReference w:id="5"/></w:r>'
            '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>PAGE \\* MERGEFORMAT</w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
            + _p("First point", extra='<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>')
            + _p("Nested point", extra='<w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr>'))
    table = ("<w:tbl>" + "".join(
        "<w:tr>" + "".join(f"<w:tc>{_p(cell)}</w:tc>" for cell in row) + "</w:tr>"
        for row in (["Ship", "Tonnage"], ["Aurora", "1200"], ["Borealis", "900"])) + "</w:tbl>")
    data = office.docx(body + table, styles=styles, headers=["ACME confidential", "ACME confidential"],
                       footers=["Page footer"], title="Fleet report",
                       comments='<w:comment w:id="5"><w:p><w:r><w:t>Reviewer: check this</w:t></w:r></w:p></w:comment>')
    pages, produced = _read(ct.DOCX, data)
    text = "\n\n".join(t for _, t in pages)
    assert "# Results" in text and "# Inherited heading" in text and "## Outlined heading" in text
    assert "The fleet has twelve ships." in text
    assert "nine" not in text and "Reviewer" not in text and "PAGE" not in text and "MERGEFORMAT" not in text
    assert "- First point" in text and "- Nested point" in text
    assert "Ship: Aurora; Tonnage: 1200" in text and "Ship: Borealis; Tonnage: 900" in text
    assert text.count("ACME confidential") == 1 and text.startswith("ACME confidential")
    assert text.rstrip().endswith("Page footer")
    assert produced.info.title == "Fleet report"


def test_pptx_one_page_per_slide_in_presentation_order_with_title_body_table_and_notes() -> None:
    table = ('<p:graphicFrame><a:graphic><a:graphicData><a:tbl>'
             + "".join("<a:tr>" + "".join(f"<a:tc><a:txBody><a:p><a:r><a:t>{c}</a:t></a:r></a:p></a:txBody></a:tc>"
                                         for c in row) + "</a:tr>" for row in (["Quarter", "Revenue"], ["Q1", "40"]))
             + "</a:tbl></a:graphicData></a:graphic></p:graphicFrame>")
    slides = [(shape("Closing", "title") + shape("Thanks", "body"), ""),
              (shape("Opening", "ctrTitle") + shape("Agenda item", "body") + shape("Detail", "body", level=1)
               + shape("7", "sldNum") + table, "Remember to greet the board")]
    pages, _ = _read(ct.PPTX, office.pptx(slides, order=[1, 0]))
    assert [n for n, _ in pages] == [1, 2]
    first, second = pages[0][1], pages[1][1]
    assert first.startswith("# Opening") and "- Agenda item" in first and "- Detail" in first
    assert "Quarter: Q1; Revenue: 40" in first
    assert "Speaker notes:\nRemember to greet the board" in first
    assert "7" not in first.replace("Speaker", "")  # the slide number placeholder is not text
    assert second.startswith("# Closing") and "Speaker notes" not in second


def test_xlsx_one_page_per_sheet_rows_with_their_header_and_dates() -> None:
    styles = '<cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14"/></cellXfs>'
    sheet1 = ('<row r="1"><c r="A1" t="s"><v>0</v></c></row>'
              '<row r="2"><c r="A2" t="s"><v>1</v></c><c r="B2" t="s"><v>2</v></c><c r="C2" t="s"><v>3</v></c></row>'
              '<row r="3"><c r="A3" t="inlineStr"><is><t>Oslo</t></is></c><c r="B3"><v>709000</v></c>'
              '<c r="C3" s="1"><v>45292</v></c></row>')
    sheet2 = '<row r="1"><c r="A1" t="inlineStr"><is><t>Notes only</t></is></c></row>'
    data = office.xlsx({"Cities": sheet1, "Other": sheet2}, shared=["City survey", "City", "Population", "Counted"],
                       styles=styles)
    pages, _ = _read(ct.XLSX, data)
    assert [n for n, _ in pages] == [1, 2]
    assert pages[0][1].startswith("## Sheet: Cities")
    assert "City survey" in pages[0][1]
    assert "City: Oslo; Population: 709000; Counted: 2024-01-01" in pages[0][1]
    assert "## Sheet: Other" in pages[1][1] and "Notes only" in pages[1][1]


def test_odt_tracked_deletions_and_comments_are_not_read_lists_and_headings_are() -> None:
    body = ('<text:tracked-changes><text:changed-region text:id="c1"><text:deletion>'
            '<text:p>removed sentence</text:p></text:deletion></text:changed-region></text:tracked-changes>'
            '<text:h text:outline-level="2">Harbour</text:h>'
            '<text:p>Boats <office:annotation><text:p>an editor note</text:p></office:annotation>leave'
            '<text:s text:c="2"/>at dawn<text:change text:change-id="c1"/>.</text:p>'
            '<text:list><text:list-item><text:p>nets</text:p><text:list><text:list-item><text:p>floats</text:p>'
            '</text:list-item></text:list></text:list-item></text:list>'
            '<table:table><table:table-row><table:table-cell><text:p>Boat</text:p></table:table-cell>'
            '<table:table-cell><text:p>Crew</text:p></table:table-cell></table:table-row><table:table-row>'
            '<table:table-cell><text:p>Gull</text:p></table:table-cell><table:table-cell><text:p>4</text:p>'
            '</table:table-cell></table:table-row></table:table>')
    text = _text(ct.ODT, office.odt(body))
    assert "## Harbour" in text and "Boats leave at dawn." in text
    assert "removed sentence" not in text and "editor note" not in text
    assert "- nets" in text and "- floats" in text and "Boat: Gull; Crew: 4" in text


def test_epub_chapters_in_spine_order_as_pages_without_styles() -> None:
    data = office.epub({"a.xhtml": "<h1>Appendix</h1><p>Tables of snowfall.</p>",
                        "b.xhtml": "<h1>Chapter One</h1><p>The telemark turn &amp; more.</p>"},
                       spine=["b.xhtml", "a.xhtml"], title="Snow")
    pages, produced = _read(ct.EPUB, data)
    assert [n for n, _ in pages] == [1, 2]
    assert pages[0][1] == "# Chapter One\n\nThe telemark turn & more."
    assert pages[1][1].startswith("# Appendix") and "color" not in pages[1][1]
    assert produced.info.title == "Snow"


def test_eml_headers_as_metadata_html_body_converted_attachments_listed() -> None:
    message = EmailMessage()
    message["From"] = "Ana <ana@example.com>"
    message["To"] = "ops@example.com"
    message["Subject"] = "Quarterly ferry schedule"
    message["Date"] = "Tue, 03 Dec 2024 09:30:00 +0000"
    message.set_content("<html><head><style>.x{}</style></head><body><h2>Schedule</h2>"
                        "<p>The ferry leaves at <b>six</b>.</p><script>track()</script></body></html>", subtype="html")
    message.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="timetable.pdf")
    pages, produced = _read(ct.EML, message.as_bytes())
    text = "\n\n".join(t for _, t in pages)
    assert "Subject: Quarterly ferry schedule" in text and "From: Ana <ana@example.com>" in text
    assert "## Schedule" in text and "The ferry leaves at six." in text
    assert "<" not in text.replace("<ana@example.com>", "") and "track()" not in text
    assert "timetable.pdf (application/pdf" in text
    email = produced.info.properties["email"]
    assert email["from"] == ["ana@example.com"] and email["subject"] == "Quarterly ferry schedule"
    assert email["date"] == "2024-12-03T09:30:00+00:00" and email["attachments"][0]["filename"] == "timetable.pdf"
    assert produced.info.title == "Quarterly ferry schedule"


def test_html_keeps_headings_and_main_text_drops_scripts_nav_and_boilerplate() -> None:
    article = "".join(f"<p>Paragraph {i} about glaciers, fjords, and the long winter of the north.</p>" for i in range(8))
    page = (b"<!DOCTYPE html><html><head><title>Glaciers</title><script>var secret = 'in the script';</script>"
            b"</head><body><nav><a href='/'>Home menu link</a></nav><header>Site banner</header>"
            b"<div class='sidebar'>Popular posts elsewhere</div><article><h1>Glaciers of Norway</h1>"
            + article.encode() + b"<ul><li>Jostedal</li><li>Svartisen</li></ul></article>"
            b"<footer>Copyright footer</footer><div style='display:none'>hidden text</div></body></html>")
    pages, produced = _read(ct.HTML, page)
    text = "\n\n".join(t for _, t in pages)
    assert text.startswith("# Glaciers of Norway") and "Paragraph 7 about glaciers" in text
    assert "- Jostedal" in text
    for boilerplate in ("in the script", "Home menu link", "Site banner", "Popular posts", "Copyright", "hidden text"):
        assert boilerplate not in text
    assert produced.info.title == "Glaciers"


def test_csv_rows_keep_their_header_and_json_keeps_key_paths() -> None:
    csv_text = _text(ct.CSV, b"city;population\nOslo;709000\nBergen;286000\n")
    assert "city: Oslo; population: 709000" in csv_text and "city: Bergen; population: 286000" in csv_text
    json_text = _text(ct.JSON, b'{"fleet": {"ships": [{"name": "Aurora", "crew": 12}], "active": true}}')
    assert "fleet.ships[0].name: Aurora" in json_text and "fleet.ships[0].crew: 12" in json_text
    assert "fleet.active: true" in json_text
