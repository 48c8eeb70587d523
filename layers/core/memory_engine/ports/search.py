"""The search index port: a plan in; the fused ranking and the rows of its page out."""

from __future__ import annotations

from typing import Protocol

from memory_engine.domain.search_models import AnyResult, EpisodeResult, MemoryScope, Scopes
from memory_engine.domain.search_plan import Ranking, SearchPlan
from memory_engine.domain.vectors import Vector


class KnowledgeIndex(Protocol):
    """Reads memory facts, document chunks and episodes (conversation turns) of ONE project. Every method filters by
    ``project_id``; rows of other projects are never seen. Raises
    :class:`memory_engine.errors.DatabaseError` when the database fails."""

    def ranking(self, project_id: str, plan: SearchPlan) -> Ranking:
        """The fused ranking of ``plan``, best first: for each signal in ``plan.query.signals`` and
        each source of ``plan.scopes``, the keys of at most ``query.depth`` live candidates (with
        raw scores for vector and keyword, and the keyword statistics per source); for convex
        fusion, what fusion reads of every listed row still in scope and of the rows within
        ``plan.window`` steps of :meth:`SearchPlan.expanded` in their conversation (facts,
        episodes) or document (chunks): cosine to ``query.embedding`` (an episode's: its best
        window's), BM25 under the lists' keyword statistics, previous neighbours, subjects, dates
        (an episode's: when it was said); all of it through
        :func:`memory_engine.domain.search_plan.fused_ranking`. With it, the rows behind the
        ranking's first ``plan.page`` keys, read in the transaction of its last statements (no
        connection taken again): score 0, ``similarity_score`` = cosine to ``query.embedding`` (an
        episode's is its best window's, and its ``content`` the window that holds the most of
        ``query.text``'s words, else the nearest to the embedding); ``plan.raw``: facts' content
        as stored; with :attr:`SearchPlan.reads_restatements`, the pairs of those rows' memory facts
        that state the same thing (domain/supersession.py: of one memory, vectors at least
        ``MIN_SIMILARITY`` alike, neither a conversation turn), read with them."""
        ...

    def recent(self, project_id: str, scopes: Scopes, limit: int, *, raw: bool = False) -> list[AnyResult]:
        """No-query reads: live facts most recent first, then chunks in document order."""
        ...

    def episodes(self, project_id: str, scope: MemoryScope, embedding: Vector | None, limit: int) -> list[EpisodeResult]:
        """Episodes of the scoped memories, nearest to ``embedding`` first (most recent when None)."""
        ...
