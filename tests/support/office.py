"""Small Office Open XML, OpenDocument and EPUB files written from their XML parts, so a test states
exactly the structure it checks (tracked changes, comments, notes, spine order...)."""

from __future__ import annotations

import io
import zipfile

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
DOC_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def zip_parts(parts: dict[str, str | bytes], *, stored_first: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        if stored_first is not None:
            archive.writestr(zipfile.ZipInfo(stored_first), parts[stored_first], compress_type=zipfile.ZIP_STORED)
        for name, data in parts.items():
            if name != stored_first:
                archive.writestr(name, data)
    return buffer.getvalue()


def _rels(items: list[tuple[str, str, str]]) -> str:
    body = "".join(f'<Relationship Id="{rid}" Type="{DOC_REL}/{kind}" Target="{target}"/>' for rid, kind, target in items)
    return f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PKG_REL}">{body}</Relationships>'


CONTENT_TYPES = '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'


def docx(body: str, *, styles: str = "", headers: list[str] = (), footers: list[str] = (),  # type: ignore[assignment]
         comments: str = "", title: str | None = None) -> bytes:
    """A .docx whose ``word/document.xml`` body is ``body`` (``w:`` elements)."""
    ns = f'xmlns:w="{W_NS}" xmlns:r="{R_NS}"'
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": CONTENT_TYPES,
        "word/document.xml": f'<?xml version="1.0" encoding="UTF-8"?><w:document {ns}><w:body>{body}</w:body></w:document>',
        "word/styles.xml": f'<?xml version="1.0"?><w:styles {ns}>{styles}</w:styles>',
    }
    rels: list[tuple[str, str, str]] = []
    for i, text in enumerate(headers):
        parts[f"word/header{i + 1}.xml"] = f'<w:hdr {ns}><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:hdr>'
        rels.append((f"rIdH{i}", "header", f"header{i + 1}.xml"))
    for i, text in enumerate(footers):
        parts[f"word/footer{i + 1}.xml"] = f'<w:ftr {ns}><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:ftr>'
        rels.append((f"rIdF{i}", "footer", f"footer{i + 1}.xml"))
    if comments:
        parts["word/comments.xml"] = f'<w:comments {ns}>{comments}</w:comments>'
        rels.append(("rIdC", "comments", "comments.xml"))
    parts["word/_rels/document.xml.rels"] = _rels(rels)
    if title:
        parts["docProps/core.xml"] = ('<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
                                      'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
                                      f'<dc:title>{title}</dc:title></cp:coreProperties>')
    return zip_parts(parts)


P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"


def pptx(slides: list[tuple[str, str]], *, order: list[int] | None = None) -> bytes:
    """Slides as (shape tree XML, notes text); ``order``: the presentation's order of the slide files."""
    ns = f'xmlns:p="{P_NS}" xmlns:a="{A_NS}" xmlns:r="{R_NS}"'
    order = order or list(range(len(slides)))
    ids = "".join(f'<p:sldId id="{256 + i}" r:id="rId{n}"/>' for i, n in enumerate(order))
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": CONTENT_TYPES,
        "ppt/presentation.xml": f'<p:presentation {ns}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>',
        "ppt/_rels/presentation.xml.rels": _rels([(f"rId{n}", "slide", f"slides/slide{n + 1}.xml")
                                                  for n in range(len(slides))]),
    }
    for n, (tree, notes) in enumerate(slides):
        parts[f"ppt/slides/slide{n + 1}.xml"] = f'<p:sld {ns}><p:cSld><p:spTree>{tree}</p:spTree></p:cSld></p:sld>'
        if notes:
            parts[f"ppt/slides/_rels/slide{n + 1}.xml.rels"] = _rels([("rIdN", "notesSlide",
                                                                       f"../notesSlides/notesSlide{n + 1}.xml")])
            parts[f"ppt/notesSlides/notesSlide{n + 1}.xml"] = (
                f'<p:notes {ns}><p:cSld><p:spTree>{shape(notes, "body")}{shape(str(n + 1), "sldNum")}'
                '</p:spTree></p:cSld></p:notes>')
    return zip_parts(parts)


def shape(text: str, placeholder: str | None = None, level: int = 0) -> str:
    ph = f'<p:nvSpPr><p:cNvPr id="1" name="s"/><p:cNvSpPr/><p:nvPr><p:ph type="{placeholder}"/></p:nvPr></p:nvSpPr>' \
        if placeholder else '<p:nvSpPr><p:cNvPr id="1" name="s"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr>'
    paragraphs = "".join(f'<a:p><a:pPr lvl="{level}"/><a:r><a:t>{line}</a:t></a:r></a:p>' for line in text.split("\n"))
    return f"<p:sp>{ph}<p:txBody>{paragraphs}</p:txBody></p:sp>"


S_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def xlsx(sheets: dict[str, str], *, shared: list[str] = (), styles: str = "") -> bytes:  # type: ignore[assignment]
    """Sheets as name -> ``<sheetData>`` content."""
    ns = f'xmlns="{S_NS}" xmlns:r="{R_NS}"'
    listed = "".join(f'<sheet name="{name}" sheetId="{i + 1}" r:id="rId{i + 1}"/>' for i, name in enumerate(sheets))
    rels = [(f"rId{i + 1}", "worksheet", f"worksheets/sheet{i + 1}.xml") for i in range(len(sheets))]
    parts: dict[str, str | bytes] = {"[Content_Types].xml": CONTENT_TYPES,
                                     "xl/workbook.xml": f"<workbook {ns}><sheets>{listed}</sheets></workbook>"}
    for i, data in enumerate(sheets.values()):
        parts[f"xl/worksheets/sheet{i + 1}.xml"] = f"<worksheet {ns}><sheetData>{data}</sheetData></worksheet>"
    if shared:
        items = "".join(f"<si><t>{s}</t></si>" for s in shared)
        parts["xl/sharedStrings.xml"] = f'<sst xmlns="{S_NS}">{items}</sst>'
        rels.append(("rIdS", "sharedStrings", "sharedStrings.xml"))
    if styles:
        parts["xl/styles.xml"] = f'<styleSheet xmlns="{S_NS}">{styles}</styleSheet>'
        rels.append(("rIdT", "styles", "styles.xml"))
    parts["xl/_rels/workbook.xml.rels"] = _rels(rels)
    return zip_parts(parts)


ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:dc="http://purl.org/dc/elements/1.1/"')


def odt(body: str) -> bytes:
    content = f'<office:document-content {ODF_NS}><office:body><office:text>{body}</office:text></office:body>' \
              '</office:document-content>'
    return zip_parts({"mimetype": "application/vnd.oasis.opendocument.text", "content.xml": content},
                     stored_first="mimetype")


def epub(chapters: dict[str, str], spine: list[str], *, title: str = "A Book") -> bytes:
    """Chapters as file name -> XHTML body; ``spine``: the reading order (file names)."""
    manifest = "".join(f'<item id="{n}" href="text/{n}" media-type="application/xhtml+xml"/>' for n in chapters)
    itemrefs = "".join(f'<itemref idref="{n}"/>' for n in spine)
    parts: dict[str, str | bytes] = {
        "mimetype": "application/epub+zip",
        "META-INF/container.xml": '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">'
                                  '<rootfiles><rootfile full-path="OEBPS/content.opf" '
                                  'media-type="application/oebps-package+xml"/></rootfiles></container>',
        "OEBPS/content.opf": '<package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
                             '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
                             f'<dc:title>{title}</dc:title></metadata><manifest>{manifest}</manifest>'
                             f'<spine>{itemrefs}</spine></package>',
    }
    for name, body in chapters.items():
        parts[f"OEBPS/text/{name}"] = (f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{name}</title>'
                                       f'<style>p {{ color: red }}</style></head><body>{body}</body></html>')
    return zip_parts(parts, stored_first="mimetype")
