"""OpenDocument text ``.odt`` (LibreOffice, Google Docs export) with zipfile and defusedxml.

``content.xml`` read in order: headings (``text:h`` and its outline level), paragraphs, lists
(``- item`` indented by nesting), tables (rows with their header), sections and frames. Tracked
changes are resolved to the final text (the deleted text lives in ``text:tracked-changes``, which is
not read); comments (``office:annotation``) and footnote bodies in the flow are left out, the notes
coming after the body. The distinct headers/footers of the master pages come once (headers first,
footers last); ``meta.xml``'s title becomes the document title.
"""

from __future__ import annotations

from collections.abc import Iterator
from xml.etree.ElementTree import Element

from memory_engine.adapters.extractors.containers import Container, ZipExtractor, ns_local
from memory_engine.adapters.extractors.sections import Budget, DocumentInfo, Paginator, table_lines
from memory_engine.domain.documents import Page

TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_SKIPPED = frozenset({"tracked-changes", "annotation", "annotation-end", "note", "change", "change-start",
                      "change-end", "bookmark", "bookmark-start", "bookmark-end", "sequence-decls",
                      "variable-decls", "user-field-decls", "table-of-content-source", "forms"})

#: Paragraph styles read as headings (the document's title and subtitle).
_TITLE_STYLES = {"Title": 1, "Subtitle": 2}


class OdtExtractor(ZipExtractor):
    what = "OpenDocument text"
    title_part = "meta.xml"

    def read(self, container: Container, name: str, info: DocumentInfo) -> Iterator[Page]:
        """Sections of the document (a page at each heading of level 1-2)."""
        return _sections(container, container.xml("content.xml"), info)


def _sections(container: Container, content: Element, info: DocumentInfo) -> Iterator[Page]:
    headers, footers = _page_furniture(container)
    out = Paginator(budget=Budget(info))
    for text in headers:
        out.block(text)
    notes: list[str] = []
    for body in content.iter(f"{OFFICE}text"):
        for element in body:
            _block(element, out, 0)
            yield from out.take()
        notes.extend(inline(n) for n in body.iter(f"{TEXT}note-body"))
    for text in [n for n in notes if n] + footers:
        out.block(text)
    yield from out.finish()


def _page_furniture(container: Container) -> tuple[list[str], list[str]]:
    headers: dict[str, None] = {}
    footers: dict[str, None] = {}
    if container.has("styles.xml"):
        for master in container.xml("styles.xml").iter(f"{STYLE}master-page"):
            for part in master:
                kind = ns_local(part.tag)
                text = inline(part)
                if text and kind.startswith("header"):
                    headers.setdefault(text)
                elif text and kind.startswith("footer"):
                    footers.setdefault(text)
    return list(headers), list(footers)


def _block(element: Element, out: Paginator, depth: int) -> None:
    tag = ns_local(element.tag)
    if tag in _SKIPPED:
        return
    if tag == "h":
        level = element.get(f"{TEXT}outline-level", "1")
        out.heading(int(level) if level.isdigit() else 1, inline(element))
    elif tag == "p":
        text = inline(element)
        style = element.get(f"{TEXT}style-name", "")
        if style in _TITLE_STYLES and text.strip():
            out.heading(_TITLE_STYLES[style], text)
        elif text.strip():
            out.block(text)
        for frame in element.iter("{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}text-box"):
            for child in frame:
                _block(child, out, depth)
    elif tag == "list":
        for item in element:
            if ns_local(item.tag) not in ("list-item", "list-header"):
                continue
            for child in item:
                if ns_local(child.tag) == "list":
                    _block(child, out, depth + 1)
                elif ns_local(child.tag) in ("p", "h"):
                    text = inline(child)
                    if text.strip():
                        out.block("  " * depth + "- " + " ".join(text.split()))
                else:
                    _block(child, out, depth)
    elif tag == "table":
        rows = [[" ".join(inline(cell).split()) for cell in row.iter(f"{TABLE}table-cell")]
                for row in element.iter(f"{TABLE}table-row")]
        for line in table_lines(rows):
            out.block(line)
    else:  # sections, soft page breaks, index bodies...
        for child in element:
            _block(child, out, depth)


def inline(element: Element) -> str:
    """The final text of a paragraph-like element: spans, links, spaces (``text:s``), tabs, line
    breaks; comments, notes and change marks out."""
    parts: list[str] = [element.text or ""] if ns_local(element.tag) not in _SKIPPED else []

    def walk(node: Element) -> None:
        for child in node:
            tag = ns_local(child.tag)
            if tag in _SKIPPED:
                parts.append(child.tail or "")
                continue
            if tag == "s":
                count = child.get(f"{TEXT}c", "1")
                parts.append(" " * min(int(count) if count.isdigit() else 1, 100))
            elif tag == "tab":
                parts.append("\t")
            elif tag == "line-break":
                parts.append("\n")
            elif tag in ("p", "h"):
                parts.append("\n" + (child.text or ""))
                walk(child)
            else:
                parts.append(child.text or "")
                walk(child)
            parts.append(child.tail or "")

    walk(element)
    return "".join(parts).strip()
