"""Word ``.docx`` (Office Open XML) with the standard library's zipfile and defusedxml.

What a reader of the final document sees, in order: headings (by the paragraph's style, its name
``heading N``/``Title``, or its outline level, following ``basedOn``), paragraphs, list items
(``- item``, indented by level), tables (rows with their header; a table nested in a cell is read
as that cell's text), content controls and text boxes. Tracked changes are resolved to the final
text (insertions and moves in, deletions and moves out); comments, field codes and deleted text
are not read. The distinct headers come once at the start and the distinct footers once at the
end; footnotes and endnotes after the body. The core properties' title becomes the document title.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from xml.etree.ElementTree import Element

from memory_engine.adapters.extractors.containers import Container, ZipExtractor, ns_local
from memory_engine.adapters.extractors.sections import Budget, DocumentInfo, Paginator, table_lines
from memory_engine.domain.documents import Page

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_HEADING_NAME = re.compile(r"^(?:heading|überschrift|titre|título|titolo|kop)\s*(\d)$", re.I)
_MARKER = re.compile(r"(?m)^#{1,6} ")
#: Elements whose text a reader of the final document does not see.
_SKIPPED = frozenset({"del", "moveFrom", "delText", "instrText", "commentReference", "commentRangeStart",
                      "commentRangeEnd", "annotationRef", "footnoteReference", "endnoteReference", "rPr", "pPr",
                      "fldData", "proofErr", "bookmarkStart", "bookmarkEnd", "lastRenderedPageBreak", "sectPr",
                      "drawing_fallback", "Fallback"})


class DocxExtractor(ZipExtractor):
    what = "Word document"

    def read(self, container: Container, name: str, info: DocumentInfo) -> Iterator[Page]:
        """Sections of the document (a page at each heading of level 1-2)."""
        return _sections(container, container.xml("word/document.xml"), info)


def _sections(container: Container, document: Element, info: DocumentInfo) -> Iterator[Page]:
    styles = _Styles(container)
    out = Paginator(budget=Budget(info))
    parts = _related_parts(container)
    for text in _distinct(_part_text(container, p, styles) for p in parts.get("header", [])):
        out.block(text)
    body = document.find(f"{W}body")
    for element in body if body is not None else []:
        _block(element, styles, out)
        yield from out.take()
    for kind in ("footnotes", "endnotes"):
        notes = [t for t in (_part_text(container, p, styles) for p in parts.get(kind, [])) if t]
        for text in notes:
            out.block(text)
    for text in _distinct(_part_text(container, p, styles) for p in parts.get("footer", [])):
        out.block(text)
    yield from out.finish()


def _related_parts(container: Container) -> dict[str, list[str]]:
    """header/footer/footnotes/endnotes part names of the main document, in relationship order."""
    rels = "word/_rels/document.xml.rels"
    found: dict[str, list[str]] = {}
    if not container.has(rels):
        return found
    for rel in container.xml(rels).iter(f"{_REL}Relationship"):
        kind = rel.get("Type", "").rsplit("/", 1)[-1]
        target = rel.get("Target", "").lstrip("/")
        if kind in ("header", "footer", "footnotes", "endnotes") and rel.get("TargetMode") != "External":
            part = target if target.startswith("word/") else f"word/{target}"
            if container.has(part):
                found.setdefault(kind, []).append(part)
    return found


def _part_text(container: Container, part: str, styles: _Styles) -> str:
    out = Paginator(limit=10**9)
    for element in container.xml(part):
        if ns_local(element.tag) in ("footnote", "endnote") and element.get(f"{W}type") in ("separator",
                                                                                             "continuationSeparator"):
            continue
        _block(element, styles, out)
    return "\n\n".join(p.text for p in out.finish())


def _distinct(texts: Iterator[str]) -> list[str]:
    seen: dict[str, None] = {}
    for text in texts:
        if text.strip():
            seen.setdefault(text.strip())
    return list(seen)


class _Styles:
    """Paragraph style id -> heading level (None: not a heading) and whether it numbers a list."""

    def __init__(self, container: Container) -> None:
        self.levels: dict[str, int | None] = {}
        self.listed: set[str] = set()
        if not container.has("word/styles.xml"):
            return
        raw: dict[str, tuple[str, str | None, int | None, bool]] = {}
        for style in container.xml("word/styles.xml").iter(f"{W}style"):
            style_id = style.get(f"{W}styleId") or ""
            name_el, based_el = style.find(f"{W}name"), style.find(f"{W}basedOn")
            outline = style.find(f"{W}pPr/{W}outlineLvl")
            numbered = style.find(f"{W}pPr/{W}numPr") is not None
            raw[style_id] = ((name_el.get(f"{W}val") or "") if name_el is not None else "",
                             based_el.get(f"{W}val") if based_el is not None else None,
                             _int(outline.get(f"{W}val")) if outline is not None else None, numbered)
        for style_id in raw:
            self.levels[style_id] = self._level(style_id, raw, 0)
            if raw[style_id][3]:
                self.listed.add(style_id)

    def _level(self, style_id: str, raw: dict[str, tuple[str, str | None, int | None, bool]], depth: int) -> int | None:
        if style_id not in raw or depth > 10:
            return None
        name, based, outline, _ = raw[style_id]
        low = name.strip().lower()
        if low == "title":
            return 1
        if low == "subtitle":
            return 2
        match = _HEADING_NAME.match(low)
        if match:
            return min(int(match.group(1)), 6)
        if outline is not None and outline < 9:
            return min(outline + 1, 6)
        return self._level(based, raw, depth + 1) if based else None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _block(element: Element, styles: _Styles, out: Paginator) -> None:
    tag = ns_local(element.tag)
    if tag == "p":
        _paragraph(element, styles, out)
    elif tag == "tbl":
        for line in table_lines(_rows(element, styles)):
            out.block(line)
    elif tag in ("sdt", "sdtContent", "customXml", "ins", "moveTo", "smartTag", "footnote", "endnote", "txbxContent",
                 "hdr", "ftr", "body"):
        for child in element:
            _block(child, styles, out)


def _paragraph(p: Element, styles: _Styles, out: Paginator) -> None:
    text = run_text(p)
    for box in p.iter(f"{W}txbxContent"):  # text boxes anchored in the paragraph
        for child in box:
            _block(child, styles, out)
    if not text.strip():
        return
    style_el = p.find(f"{W}pPr/{W}pStyle")
    style = style_el.get(f"{W}val", "") if style_el is not None else ""
    outline = p.find(f"{W}pPr/{W}outlineLvl")
    level = styles.levels.get(style)
    if outline is not None and (own := _int(outline.get(f"{W}val"))) is not None and own < 9:
        level = min(own + 1, 6)
    numbering = p.find(f"{W}pPr/{W}numPr")
    if level is not None:
        out.heading(level, text)
    elif numbering is not None or style in styles.listed:
        depth_el = numbering.find(f"{W}ilvl") if numbering is not None else None
        depth = _int(depth_el.get(f"{W}val")) if depth_el is not None else 0
        out.block("  " * (depth or 0) + "- " + " ".join(text.split()))
    else:
        out.block(text)


def run_text(element: Element) -> str:
    """The final text of a paragraph: runs, tabs and breaks; insertions in, deletions, comments,
    field codes and text boxes (read as their own blocks) out."""
    parts: list[str] = []

    def walk(node: Element) -> None:
        for child in node:
            tag = ns_local(child.tag)
            if tag in _SKIPPED or tag == "txbxContent":
                continue
            if tag == "t":
                parts.append(child.text or "")
            elif tag == "tab":
                parts.append("\t")
            elif tag in ("br", "cr"):
                parts.append("\n")
            elif tag == "noBreakHyphen":
                parts.append("-")
            elif tag == "sym":
                parts.append("")
            else:
                walk(child)

    walk(element)
    return "".join(parts)


def _rows(table: Element, styles: _Styles) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table:
        if ns_local(row.tag) != "tr":
            continue
        cells: list[str] = []
        for cell in row:
            if ns_local(cell.tag) == "sdt":  # a content control around cells
                inner = cell.find(f"{W}sdtContent/{W}tc")
                cell = inner if inner is not None else cell
            if ns_local(cell.tag) != "tc":
                continue
            out = Paginator(limit=10**9)
            for child in cell:
                _block(child, styles, out)
            text = " ".join(p.text for p in out.finish())
            span_el = cell.find(f"{W}tcPr/{W}gridSpan")
            span = (_int(span_el.get(f"{W}val")) or 1) if span_el is not None else 1
            cells.append(" ".join(_MARKER.sub("", text).split()))
            cells.extend([""] * (min(span, 50) - 1))
        rows.append(cells)
    return rows
