"""PowerPoint ``.pptx`` (Office Open XML): one page per slide, in the presentation's order.

A slide's page starts with its title (``# title``), then the text of its shapes in their order
(bullets as ``- item`` indented by level, grouped shapes included), tables as rows with their
header, and last its speaker notes under ``Speaker notes:``. Slide numbers, dates and footers
placeholders are left out; hidden slides are read too (marked ``(hidden slide)``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from xml.etree.ElementTree import Element

from memory_engine.adapters.extractors.containers import Container, ZipExtractor, ns_local
from memory_engine.adapters.extractors.sections import Budget, DocumentInfo, Paginator, table_lines
from memory_engine.domain.documents import MAX_PAGES, Page
from memory_engine.domain.ingestion_errors import TooLarge

P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_TITLES = frozenset({"title", "ctrTitle"})
_SKIPPED_PLACEHOLDERS = frozenset({"sldNum", "dt", "ftr", "hdr", "sldImg"})


def relationships(container: Container, part: str) -> dict[str, tuple[str, str]]:
    """rId -> (relationship type's last segment, target part) of ``part``."""
    folder, name = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", name + ".rels")
    found: dict[str, tuple[str, str]] = {}
    if not container.has(rels):
        return found
    for rel in container.xml(rels).iter(f"{_REL}Relationship"):
        if rel.get("TargetMode") == "External":
            continue
        target = rel.get("Target", "")
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        found[rel.get("Id", "")] = (rel.get("Type", "").rsplit("/", 1)[-1], path)
    return found


class PptxExtractor(ZipExtractor):
    what = "PowerPoint presentation"

    def read(self, container: Container, name: str, info: DocumentInfo) -> Iterator[Page]:
        """One page per slide (its number)."""
        presentation = container.xml("ppt/presentation.xml")
        rels = relationships(container, "ppt/presentation.xml")
        slides = [rels[sid.get(f"{_R}id", "")][1] for sid in presentation.iter(f"{P}sldId")
                  if sid.get(f"{_R}id", "") in rels]
        if len(slides) > MAX_PAGES:
            raise TooLarge(f"{name} has {len(slides)} slides; the limit is {MAX_PAGES}: split it")
        return _slides(container, slides, Budget(info))


def _slides(container: Container, slides: list[str], budget: Budget) -> Iterator[Page]:
    for number, part in enumerate(slides, start=1):
        if not container.has(part):
            continue
        out = Paginator(number=number, budget=budget, split_level=0)
        slide = container.xml(part)
        if slide.get("show") == "0":
            out.block("(hidden slide)")
        tree = slide.find(f"{P}cSld/{P}spTree")
        if tree is not None:
            _shapes(tree, out)
        notes = [p for kind, p in relationships(container, part).values() if kind == "notesSlide"]
        if notes and container.has(notes[0]):
            note_out = Paginator(limit=10**9)
            note_tree = container.xml(notes[0]).find(f"{P}cSld/{P}spTree")
            if note_tree is not None:
                _shapes(note_tree, note_out, notes=True)
            text = "\n".join(p.text for p in note_out.finish())
            if text.strip():
                out.block("Speaker notes:\n" + text)
        yield from out.finish()


def _shapes(tree: Element, out: Paginator, *, notes: bool = False) -> None:
    titles: list[Element] = []
    others: list[Element] = []
    for shape in tree:
        kind = ns_local(shape.tag)
        if kind == "sp":
            placeholder = shape.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
            ph_type = placeholder.get("type", "body") if placeholder is not None else None
            if ph_type in _SKIPPED_PLACEHOLDERS or (notes and ph_type not in ("body", None)):
                continue
            (titles if ph_type in _TITLES and not notes else others).append(shape)
        elif kind in ("grpSp", "graphicFrame"):
            others.append(shape)
    for shape in titles:
        out.heading(1, " ".join(_paragraph_text(p) for p in shape.iter(f"{A}p")))
    for shape in others:
        _shape(shape, out, bullets=not notes)


def _shape(shape: Element, out: Paginator, *, bullets: bool = True) -> None:
    kind = ns_local(shape.tag)
    if kind == "grpSp":
        for child in shape:
            if ns_local(child.tag) in ("sp", "grpSp", "graphicFrame"):
                _shape(child, out, bullets=bullets)
        return
    if kind == "graphicFrame":
        for table in shape.iter(f"{A}tbl"):
            rows = [[" ".join(_paragraph_text(p) for p in cell.iter(f"{A}p")) for cell in row.findall(f"{A}tc")]
                    for row in table.findall(f"{A}tr")]
            for line in table_lines(rows):
                out.block(line)
        return
    body = shape.find(f"{P}txBody")
    if body is None:
        return
    for paragraph in body.findall(f"{A}p"):
        text = _paragraph_text(paragraph)
        if not text.strip():
            continue
        props = paragraph.find(f"{A}pPr")
        level = int(props.get("lvl", "0")) if props is not None and props.get("lvl", "0").isdigit() else 0
        bulleted = props is None or props.find(f"{A}buNone") is None
        if bullets and (level or (bulleted and _in_body_placeholder(shape))):
            out.block("  " * level + "- " + text)
        else:
            out.block(text)


def _in_body_placeholder(shape: Element) -> bool:
    placeholder = shape.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
    return placeholder is not None and placeholder.get("type", "body") in ("body", "obj")


def _paragraph_text(paragraph: Element) -> str:
    parts: list[str] = []
    for child in paragraph.iter():
        tag = ns_local(child.tag)
        if tag == "t":
            parts.append(child.text or "")
        elif tag == "br":
            parts.append("\n")
    return " ".join("".join(parts).split())
