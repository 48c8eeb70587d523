"""The search index port: ranked candidate lists per signal, then the rows to show."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from memory_engine.domain.search_models import (
    Candidate,
    DocumentResult,
    EpisodeResult,
    MemoryResult,
    MemoryScope,
    RankedLists,
    ResultKey,
    Scopes,
    SignalQuery,
)
from memory_engine.domain.vectors import Vector


class KnowledgeIndex(Protocol):
    """Reads memory facts and document chunks of ONE project. Every method filters by
    ``project_id``; rows of other projects are never seen. Raises
    :class:`memory_engine.errors.DatabaseError` when the database fails."""

    def rank(self, project_id: str, query: SignalQuery, scopes: Scopes) -> RankedLists:
        """For each signal in ``query.signals`` and each source in ``scopes``, the keys of at most
        ``query.depth`` live candidates, best first, under the list key ``(source, signal)`` (with
        raw scores for vector and keyword, and the keyword statistics per source)."""
        ...

    def candidates(
        self, project_id: str, scopes: Scopes, ranked: RankedLists, embedding: Vector | None, *, top: Sequence[ResultKey],
        window: int,
    ) -> dict[ResultKey, Candidate]:
        """Every listed row still in scope, plus the rows within ``window`` steps of each of ``top``
        in its conversation (facts) or document (chunks), with what fusion reads of them: cosine
        to ``embedding``, BM25 under ``ranked.keyword_stats``, previous neighbours, subjects."""
        ...

    def rank_and_read(
        self, project_id: str, query: SignalQuery, scopes: Scopes, *, window: int,
        top_of: Callable[[RankedLists], Sequence[ResultKey]],
    ) -> tuple[RankedLists, dict[ResultKey, Candidate]]:
        """:meth:`rank`, then :meth:`candidates` of ``query.embedding`` with ``top`` chosen by
        ``top_of``; an index may read each source's candidates as soon as its lists are in, giving
        ``top_of`` that source's lists alone (its candidates are then a superset of those of the
        overall top: :func:`memory_engine.domain.fusion.within_reach` keeps the latter). By
        default the two one after the other."""
        ranked = self.rank(project_id, query, scopes)
        return ranked, self.candidates(project_id, scopes, ranked, query.embedding, top=top_of(ranked), window=window)

    def fetch(
        self, project_id: str, keys: Sequence[ResultKey], embedding: Vector | None, *, raw: bool = False
    ) -> dict[ResultKey, MemoryResult | DocumentResult]:
        """The rows behind ``keys`` (score 0; ``similarity_score`` = cosine to ``embedding``)."""
        ...

    def recent(self, project_id: str, scopes: Scopes, limit: int, *, raw: bool = False) -> list[MemoryResult | DocumentResult]:
        """No-query reads: live facts most recent first, then chunks in document order."""
        ...

    def episodes(self, project_id: str, scope: MemoryScope, embedding: Vector | None, limit: int) -> list[EpisodeResult]:
        """Episodes of the scoped memories, nearest to ``embedding`` first (most recent when None)."""
        ...
