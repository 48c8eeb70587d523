"""Chunkers are pure functions: property tests (hypothesis) over arbitrary text."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_engine.domain.chunking import chunk_pages, normalize_text, recursive_spans, size_spans
from memory_engine.domain.documents import ChunkSettings, ChunkStrategy, Page

words = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=30)
separators = st.sampled_from([" ", "  ", "\n", "\n\n", ". ", "! ", "\n# ", "\n\n## ", "? "])
texts = st.lists(st.tuples(words, separators), min_size=0, max_size=120).map(lambda xs: "".join(w + s for w, s in xs))


@given(length=st.integers(0, 5000), size=st.integers(1, 600), data=st.data())
def test_size_windows_cover_in_order_with_exact_overlap(length: int, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    spans = size_spans(length, size, overlap)
    if length == 0:
        assert spans == []
        return
    assert spans[0][0] == 0 and spans[-1][1] == length
    for (s1, e1), (s2, e2) in itertools.pairwise(spans):
        assert s2 - s1 == size - overlap  # step = size - overlap
        assert e1 - s2 == overlap  # consecutive windows share exactly `overlap` characters
        assert e1 - s1 == size
    assert all(0 < e - s <= size for s, e in spans)


@given(text=texts, size=st.integers(50, 400), data=st.data())
def test_size_chunks_overlap_exactly_and_are_never_empty(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    chunks = chunk_pages([Page(number=1, text=text)], ChunkSettings(strategy=ChunkStrategy.SIZE, size=size,
                                                                     overlap=overlap))
    assert all(c.content.strip() for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for a, b in itertools.pairwise(chunks):
        if overlap:
            assert a.content[-overlap:] == b.content[:overlap]


@given(text=texts, size=st.integers(20, 300))
@settings(max_examples=200)
def test_recursive_spans_cover_the_text_in_order_and_never_cut_a_word(text: str, size: int) -> None:
    spans = recursive_spans(text, size)
    assert "".join(text[s:e] for s, e in spans) == text  # cover, in order, nothing lost or repeated
    for s, e in spans:
        piece = text[s:e]
        assert len(piece) <= size or len(piece.split()) <= 1  # only a single long word may exceed size
    for _, cut in spans[:-1]:
        assert text[cut - 1].isspace() or text[cut].isspace(), f"cut inside a word at {cut}"


@given(text=texts, size=st.integers(50, 300))
def test_recursive_chunks_are_non_empty_and_in_order(text: str, size: int) -> None:
    chunks = chunk_pages([Page(number=1, text=text)], ChunkSettings(strategy=ChunkStrategy.RECURSIVE, size=size,
                                                                     overlap=0))
    assert all(c.content and c.content == c.content.strip() for c in chunks)
    assert re.sub(r"\s+", "", "".join(c.content for c in chunks)) == re.sub(r"\s+", "", text)


def test_recursive_prefers_headings_then_paragraphs() -> None:
    text = "# One\n\nAlpha beta gamma.\n\n# Two\n\nDelta epsilon zeta. Eta theta."
    chunks = chunk_pages([Page(number=None, text=text)], ChunkSettings(strategy=ChunkStrategy.RECURSIVE, size=60,
                                                                       overlap=0))
    assert [c.content for c in chunks] == ["# One\n\nAlpha beta gamma.", "# Two\n\nDelta epsilon zeta. Eta theta."]


def test_page_strategy_keeps_page_numbers_and_drops_blank_pages() -> None:
    pages = [Page(number=1, text="first"), Page(number=2, text="  \n"), Page(number=3, text="third")]
    chunks = chunk_pages(pages, ChunkSettings(strategy=ChunkStrategy.PAGE))
    assert [(c.index, c.page, c.content) for c in chunks] == [(0, 1, "first"), (1, 3, "third")]


def test_whole_joins_pages_and_size_attributes_the_start_page() -> None:
    pages = [Page(number=1, text="a" * 30), Page(number=2, text="b" * 30)]
    assert [c.content for c in chunk_pages(pages, ChunkSettings(strategy=ChunkStrategy.WHOLE))] == ["a" * 30 + "\n\n" + "b" * 30]
    sized = chunk_pages(pages, ChunkSettings(strategy=ChunkStrategy.SIZE, size=50, overlap=10))
    assert [c.page for c in sized] == [1, 2]


def test_normalize_text_resolves_ligatures_and_whitespace() -> None:
    assert normalize_text("Au\ufb02age  und \ufb01nden\r\n\n\n\nNeu \t Zeile   ") == "Auflage und finden\n\nNeu Zeile"


def test_blank_text_gives_no_chunks() -> None:
    for strategy in ChunkStrategy:
        assert chunk_pages([Page(number=1, text=" \n ")], ChunkSettings(strategy=strategy)) == []
