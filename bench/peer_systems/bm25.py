"""Plain BM25 (bm25s) over the same units: the keyword baseline."""

from __future__ import annotations

from typing import Any

from peer_systems.base import (
    Dataset,
    K,
    Query,
    System,
    Unit,
)


class Bm25(System):
    """bm25s, in memory, its quickstart: English stopwords, PyStemmer's English stemmer, defaults
    (Lucene BM25, k1 1.5, b 0.75, numpy backend); one index per conversation."""

    key = "bm25s"
    rows = ("BM25 (bm25s)",)
    uses_postgres = False

    def setup(self, ds: Dataset) -> None:
        import Stemmer

        self.stemmer = Stemmer.Stemmer("english")
        self.indexes: dict[str, tuple[Any, list[Unit]]] = {}

    def load(self, ds: Dataset) -> None:
        import bm25s

        for group, units in ds.groups().items():
            tokens = bm25s.tokenize([u.text for u in units], stopwords="en", stemmer=self.stemmer, show_progress=False)
            retriever = bm25s.BM25()
            retriever.index(tokens, show_progress=False)
            self.indexes[group] = (retriever, units)

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        import bm25s

        retriever, units = self.indexes[query.group]
        tokens = bm25s.tokenize(query.text, stemmer=self.stemmer, show_progress=False)
        docs, scores = retriever.retrieve(tokens, k=min(K, len(units)), show_progress=False)
        return [frozenset({units[int(i)].label}) for i, s in zip(docs[0], scores[0], strict=True) if s > 0]
