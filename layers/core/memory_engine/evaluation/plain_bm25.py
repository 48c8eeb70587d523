"""A plain BM25 index (bm25s: English stop words, the Snowball stemmer, Lucene's BM25) over the same
texts the engine stores, as the row the keyword signal is compared with in every harness
(``plain BM25 (bm25s)``). bm25s is in the ``dev`` extra, not a runtime dependency."""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: The row name every harness prints.
ROW = "plain BM25 (bm25s)"


def index(ids: Sequence[str], texts: Sequence[str]) -> Callable[[str, int], list[str]]:
    """A function from a query and ``k`` to the ids of its best ``k`` texts, best first (fewer when
    fewer texts share a word with it)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)

    def top(query: str, k: int = 10) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab or not ids:
            return []
        found, scores = retriever.retrieve(tokens, k=min(k, len(ids)), show_progress=False)
        return [ids[int(i)] for i, score in zip(found[0], scores[0], strict=True) if score > 0]

    return top
