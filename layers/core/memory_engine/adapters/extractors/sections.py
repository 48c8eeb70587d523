"""Structured text -> pages the chunker understands.

The extractors of structured formats (Word, OpenDocument, HTML, EPUB, e-mail, CSV, JSON, sheets)
emit blocks: headings (``# Title`` markdown, which the ``recursive`` chunker splits at), paragraphs,
list items (``- item``, indented two spaces a level) and table rows (``header: value; header:
value``, so a row is found by any of its cells and read with its header). :class:`Paginator` packs
them into pages: a new page at each heading of level 1-2 and whenever a page would pass
:data:`SECTION_CHARS` (then the next page repeats the heading trail, so every page says where it
is). The default ``page`` chunk strategy then makes one chunk per section.

:class:`Budget` bounds a document's text at :data:`MAX_DOCUMENT_CHARS`; what is cut is said in the
text and in the document's notes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from memory_engine.domain.chunking import normalize_text
from memory_engine.domain.documents import MAX_TEXT_CHARS, Page
from memory_engine.ports.extractors import DocumentInfo, Extracted

__all__ = ["Budget", "DocumentInfo", "Extracted", "Paginator", "table_lines"]

SECTION_CHARS = 4000
#: A first row with a longer cell is not taken for a table's header.
MAX_HEADER_CHARS = 80
MAX_DOCUMENT_CHARS = MAX_TEXT_CHARS


class Budget:
    """The characters a document may still produce; ``take`` says whether a block still fits."""

    def __init__(self, info: DocumentInfo, limit: int = MAX_DOCUMENT_CHARS) -> None:
        self.info, self.left, self.exhausted = info, limit, False

    def take(self, text: str) -> bool:
        if self.exhausted:
            return False
        self.left -= len(text) + 1
        if self.left < 0:
            self.exhausted = True
            self.info.notes.append(f"text bounded at {MAX_DOCUMENT_CHARS:,} characters; the rest was not read")
            return False
        return True


def table_lines(table: Sequence[Sequence[str]]) -> list[str]:
    """A table as text rows with their header: the first row with text is the header, every later
    row becomes ``header: value; header: value`` (empty cells left out; a cell without a header is
    named by its column number). A one-column or one-row table, or one whose first row does not
    look like a header (long or mostly empty cells: a layout table), is its cells' text, a line a row."""
    rows = [cleaned for cleaned in ([" ".join(cell.split()) for cell in row] for row in table) if any(cleaned)]
    if not rows:
        return []
    width = max(len(row) for row in rows)
    header = rows[0] + [""] * (width - len(rows[0]))
    named = [cell for cell in header if cell]
    if width == 1 or len(rows) == 1 or len(named) * 2 < width or any(len(cell) > MAX_HEADER_CHARS for cell in named):
        return [" | ".join(cell for cell in row if cell) for row in rows]
    names = [name or f"column {i + 1}" for i, name in enumerate(header)]
    lines = [" | ".join(cell for cell in header if cell)]
    for row in rows[1:]:
        pairs = [f"{names[i]}: {cell}" for i, cell in enumerate(row) if cell and cell != names[i]]
        if pairs:
            lines.append("; ".join(pairs))
    return lines


class Paginator:
    """Blocks -> pages (see the module docstring). ``number``: the page number every page gets
    (a slide's, a sheet's, a chapter's; None for formats without pages)."""

    def __init__(self, *, number: int | None = None, limit: int = SECTION_CHARS, split_level: int = 2,
                 budget: Budget | None = None) -> None:
        self.number, self.limit, self.split_level, self.budget = number, limit, split_level, budget
        self._blocks: list[str] = []
        self._size = 0
        self._new = 0  # blocks added since the last page (a page of headings only is still a page)
        self._trail: list[tuple[int, str]] = []  # the headings above the current block
        self._ready: list[Page] = []

    def heading(self, level: int, text: str) -> None:
        text = " ".join(text.split())
        if not text:
            return
        level = max(1, min(level, 6))
        if level <= self.split_level and self._has_body():
            self._flush()
        self._trail = [(lvl, t) for lvl, t in self._trail if lvl < level] + [(level, text)]
        self._add("#" * level + " " + text)

    def block(self, text: str) -> None:
        """A paragraph, a list item or a table row (kept as one block: never split from its start)."""
        text = text.strip("\n")
        if not text.strip():
            return
        if self._size and self._size + len(text) > self.limit and self._has_body():
            self._flush(continued=True)
        self._add(text)

    def _has_body(self) -> bool:
        return any(not b.startswith("#") for b in self._blocks)

    def _add(self, text: str) -> None:
        if self.budget is not None and not self.budget.take(text):
            return
        self._blocks.append(text)
        self._size += len(text) + 2
        self._new += 1

    def _flush(self, *, continued: bool = False) -> None:
        text = normalize_text("\n\n".join(self._blocks))
        if text:
            self._ready.append(Page(number=self.number, text=text))
        self._blocks, self._size, self._new = [], 0, 0
        if continued:  # the next page says where it is
            for level, heading in self._trail:
                self._blocks.append("#" * level + " " + heading)
                self._size += len(heading) + level + 3

    def take(self) -> Iterator[Page]:
        """The pages completed so far (call between blocks to stream them)."""
        ready, self._ready = self._ready, []
        yield from ready

    def finish(self) -> Iterator[Page]:
        if self._new:
            self._flush()
        yield from self.take()
