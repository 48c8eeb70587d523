"""Chunkers: pure functions from extracted pages to chunks.

* ``page``: one chunk per non-empty page (page number kept).
* ``whole``: the whole text as one chunk.
* ``size``: a character window of ``size`` with ``overlap``; step = size - overlap; windows are
  exact slices of the joined text, so consecutive windows overlap by exactly ``overlap`` characters.
* ``recursive``: splits at headings, then paragraphs, then sentences, then words, and packs the
  pieces greedily into chunks of at most ``size`` characters. Every cut falls on whitespace, so a
  word is never cut (a single word longer than ``size`` becomes its own, longer chunk).

For the joined strategies, pages are joined with :data:`PAGE_SEPARATOR` and a chunk is
attributed to the page its first character comes from.
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence

from memory_engine.domain.documents import Chunk, ChunkSettings, ChunkStrategy, Page

PAGE_SEPARATOR = "\n\n"

_HEADING = re.compile(r"\n(?=#{1,6}[ \t])|\n(?=[^\n]{1,120}\n[=-]{3,}[ \t]*(?:\n|$))")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE = re.compile(r"(?<=[.!?;:…。؟])\s+")
_WORD = re.compile(r"\s+")
#: Separator levels of the recursive splitter, coarsest first.
LEVELS: tuple[re.Pattern[str], ...] = (_HEADING, _PARAGRAPH, _SENTENCE, _WORD)

_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalize_text(text: str) -> str:
    """NFKC (ligatures such as "ﬁ" become "fi"), no control characters, runs of spaces
    collapsed, lines right-trimmed, at most one blank line in a row."""
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    text = _SPACES.sub(" ", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()


def chunk_pages(pages: Sequence[Page], settings: ChunkSettings) -> list[Chunk]:
    """Chunks of ``pages`` under ``settings``; never returns an empty or blank chunk."""
    if settings.strategy is ChunkStrategy.PAGE:
        return list(stream_chunks(pages, settings))
    text, starts, numbers = _join(pages)
    if not text.strip():
        return []
    if settings.strategy is ChunkStrategy.WHOLE:
        spans = [(0, len(text))]
    elif settings.strategy is ChunkStrategy.SIZE:
        spans = size_spans(len(text), settings.size, settings.overlap)
    else:
        spans = recursive_spans(text, settings.size)
    chunks: list[Chunk] = []
    for start, end in spans:
        piece = text[start:end]
        content = piece if settings.strategy is ChunkStrategy.SIZE else piece.strip()
        if not content.strip():
            continue
        first = start + (len(piece) - len(piece.lstrip()))
        page = numbers[bisect.bisect_right(starts, first) - 1] if starts else None
        chunks.append(Chunk(index=len(chunks), page=page, content=content))
    return chunks


def stream_chunks(pages: Iterable[Page], settings: ChunkSettings) -> Iterator[Chunk]:
    """The chunks of :func:`chunk_pages`, as early as the strategy allows: ``page`` chunks come as
    each page arrives (the pipeline embeds them while later pages are parsed); the joined strategies
    need the whole text, so their chunks come after the last page."""
    if settings.strategy is not ChunkStrategy.PAGE:
        yield from chunk_pages(list(pages), settings)
        return
    index = 0
    for page in pages:
        text = page.text.strip()
        if text:
            yield Chunk(index=index, page=page.number, content=text)
            index += 1


def _join(pages: Sequence[Page]) -> tuple[str, list[int], list[int | None]]:
    parts: list[str] = []
    starts: list[int] = []
    numbers: list[int | None] = []
    offset = 0
    for page in pages:
        if not page.text.strip():
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        starts.append(offset)
        numbers.append(page.number)
        parts.append(page.text)
        offset += len(page.text)
    return "".join(parts), starts, numbers


def size_spans(length: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows ``[start, start + size)`` with step ``size - overlap``, the last one ending at
    ``length``; no window lies entirely inside the previous one."""
    if length <= 0:
        return []
    if not 0 <= overlap < size:
        raise ValueError("need 0 <= overlap < size")
    step = size - overlap
    spans = []
    start = 0
    while True:
        end = min(start + size, length)
        spans.append((start, end))
        if end >= length:
            return spans
        start += step


def recursive_spans(text: str, size: int) -> list[tuple[int, int]]:
    """Contiguous spans covering ``text`` in order; each at most ``size`` long unless it is a
    single word; every boundary is next to whitespace."""
    pieces = _split(text, 0, len(text), 0, size)
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        if merged and end - merged[-1][0] <= size:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _split(text: str, start: int, end: int, level: int, size: int) -> list[tuple[int, int]]:
    if end - start <= size or level >= len(LEVELS):
        return [(start, end)]
    cuts = [m.end() for m in LEVELS[level].finditer(text, start, end) if start < m.end() < end]
    if level == len(LEVELS) - 1:  # words: the finest level; long words stay whole
        return _pairs(start, cuts, end)
    if not cuts:
        return _split(text, start, end, level + 1, size)
    out: list[tuple[int, int]] = []
    for s, e in _pairs(start, cuts, end):
        out.extend(_split(text, s, e, level + 1, size))
    return out


def _pairs(start: int, cuts: list[int], end: int) -> list[tuple[int, int]]:
    bounds = [start, *sorted(set(cuts)), end]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
