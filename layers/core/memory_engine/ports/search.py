"""The search index port: a plan in, the fused ranking out; then the rows to show."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memory_engine.domain.search_models import (
    DocumentResult,
    EpisodeResult,
    MemoryResult,
    MemoryScope,
    ResultKey,
    Scopes,
)
from memory_engine.domain.search_plan import RankedRow, SearchPlan
from memory_engine.domain.vectors import Vector


class KnowledgeIndex(Protocol):
    """Reads memory facts and document chunks of ONE project. Every method filters by
    ``project_id``; rows of other projects are never seen. Raises
    :class:`memory_engine.errors.DatabaseError` when the database fails."""

    def ranking(self, project_id: str, plan: SearchPlan) -> list[RankedRow]:
        """The fused ranking of ``plan``, best first: for each signal in ``plan.query.signals`` and
        each source of ``plan.scopes``, the keys of at most ``query.depth`` live candidates (with
        raw scores for vector and keyword, and the keyword statistics per source); for convex
        fusion, what fusion reads of every listed row still in scope and of the rows within
        ``plan.window`` steps of :meth:`SearchPlan.expanded` in their conversation (facts) or
        document (chunks): cosine to ``query.embedding``, BM25 under the lists' keyword
        statistics, previous neighbours, subjects, dates; all of it through
        :func:`memory_engine.domain.search_plan.fused_ranking`."""
        ...

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
