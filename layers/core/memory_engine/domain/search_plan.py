"""What a ranking asks of the search index, and the ranking it gets back (pure).

The service builds a :class:`SearchPlan` (the query as the index sees it, the sources' scopes, the
fusion config) and hands it to the index in one call
(:meth:`memory_engine.ports.search.KnowledgeIndex.ranking`); the index runs the signals, reads the
candidates the plan asks for (:meth:`SearchPlan.expanded` says whose neighbours) and returns
:func:`fused_ranking` of what it found with the rows of its first ``plan.page`` keys
(:class:`Ranking`): data in, data out, no call back into the service.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_engine.domain.fusion import evidence, fuse, top_keys, within_reach
from memory_engine.domain.relevance import Evidence, relevance
from memory_engine.domain.rrf import rrf
from memory_engine.domain.search_config import SearchConfig, Signal
from memory_engine.domain.search_models import (
    AnyResult,
    Candidate,
    ListKey,
    RankedLists,
    ResultKey,
    Scopes,
    SignalQuery,
    SourceType,
)
from memory_engine.domain.supersession import Restatement


@dataclass(frozen=True)
class SearchPlan:
    """One ranking to run: ``query`` over the sources ``scopes`` selects, fused as ``config`` says
    (convex fusion over the candidates' features, or RRF of the lists' ranks alone)."""

    query: SignalQuery
    scopes: Scopes
    config: SearchConfig
    #: How many of the ranking's first rows are read with it (:class:`Ranking`), as the page shows
    #: them (``raw``: content as stored, without the context line).
    page: int = 0
    raw: bool = False

    @property
    def reads_candidates(self) -> bool:
        """Whether the ranking reads the listed rows' features (convex fusion); RRF fuses ranks only."""
        return self.config.fusion != "rrf"

    @property
    def reads_restatements(self) -> bool:
        """Whether the page's facts that state the same thing are read with its rows, for the
        service to put the newer first (``config.newer_first``; domain/supersession.py): convex
        fusion with a query vector, as the pairs are the facts' own vectors alike."""
        query = self.query
        return (self.config.newer_first and self.reads_candidates and Signal.VECTOR in query.signals
                and query.embedding is not None)

    @property
    def window(self) -> int:
        """How many steps around a row of :meth:`expanded` its neighbours are read (0: none)."""
        return self.config.neighbour_window if self.reads_candidates and self.config.neighbour_weight > 0 else 0

    def reads_rows(self, lists: RankedLists, source: SourceType) -> bool:
        """Whether fusion needs ``source``'s listed rows read (their candidate read): not when
        ``lists`` already hold all it reads of them (:func:`listed_candidates`): no neighbours
        (:attr:`window` 0), no subject boost that can apply, no recency tie-breaker, no date the query
        names (the date boost and the score's ``dated`` evidence read each row's date), and ``source``
        has one list whose score is all the evidence its rows have: a vector list, or a keyword list
        when the query has no vector (else each row's cosine is read). So ``vector_only`` reads
        nothing before its page unless the query names a date."""
        if not self.reads_candidates:
            return False
        config, query = self.config, self.query
        if self.window or config.recency_weight > 0:
            return True
        if (config.subject_boost and (query.entity_names or query.speakers)) or query.dates:
            return True
        own = [signal for (s, signal) in lists.lists if s == source]
        if own == [Signal.VECTOR]:
            return False
        return not (own == [Signal.KEYWORD] and query.embedding is None)

    def expanded(self, lists: RankedLists) -> list[ResultKey]:
        """The rows whose neighbours are read: the best ``config.neighbour_expand`` of ``lists`` by
        :func:`memory_engine.domain.fusion.top_keys`, a first ordering before any row is read (none
        without a :attr:`window`). Given one source's lists alone, it picks that source's best: a
        superset of the neighbours of the overall best, which :func:`fused_ranking` cuts back."""
        return top_keys(lists, self.config, self.config.neighbour_expand) if self.window else []


@dataclass(frozen=True)
class RankedRow:
    """One row of the fused ranking: its fused score (the order), its rank in each list that had it
    and its evidence (domain/relevance.py; None for RRF, whose rows are scored once read)."""

    key: ResultKey
    fused: float
    ranks: dict[ListKey, int]
    evidence: Evidence | None = None

    @property
    def estimate(self) -> float:
        """The row's own relevance estimate (0 without evidence)."""
        return 0.0 if self.evidence is None else relevance(self.evidence)


@dataclass(frozen=True)
class Ranking:
    """What the index answers for a plan: the whole fused ranking, best first, and the rows of its
    first ``plan.page`` keys still in scope, read in the same transaction as the last of the
    ranking's statements (a key deleted meanwhile has no row); with
    :attr:`SearchPlan.reads_restatements`, the pairs of those rows' facts that state the same
    thing, read with them."""

    rows: list[RankedRow]
    shown: dict[ResultKey, AnyResult]
    restated: tuple[Restatement, ...] = ()


def listed_candidates(lists: RankedLists, source: SourceType) -> dict[ResultKey, Candidate]:
    """``source``'s listed rows as candidates with the scores their lists gave: what a read of them
    would find when :meth:`SearchPlan.reads_rows` says none is needed (the cosine of a vector list,
    the BM25 of a keyword list)."""
    found: dict[ResultKey, Candidate] = {}
    for (s, signal), keys in lists.lists.items():
        if s == source and signal in (Signal.VECTOR, Signal.KEYWORD):
            for key, score in zip(keys, lists.scores.get((s, signal), []), strict=True):
                found[key] = Candidate(similarity=float(score)) if signal is Signal.VECTOR else Candidate(bm25=float(score))
    return found


def fused_ranking(
    plan: SearchPlan, lists: RankedLists, candidates: dict[ResultKey, Candidate]
) -> list[RankedRow]:
    """The whole ranking, best first. Convex fusion (:func:`memory_engine.domain.fusion.fuse`) of
    ``candidates``, kept to the listed rows and the neighbours of :meth:`SearchPlan.expanded` of all
    ``lists`` (:func:`memory_engine.domain.fusion.within_reach`: an index may have read the
    neighbours of each source's own best); or, for RRF, Reciprocal Rank Fusion of ``lists``
    (``candidates`` unused)."""
    config = plan.config
    if not plan.reads_candidates:
        weights = {name: config.weight(name[1]) for name in lists.lists}
        return [RankedRow(f.key, f.score, f.ranks) for f in rrf(lists.lists, k=config.rrf_k, weights=weights)]
    if plan.window:
        candidates = within_reach(candidates, lists, plan.expanded(lists), plan.window)
    names = frozenset((*plan.query.entity_names, *plan.query.speakers)) if config.subject_boost else frozenset()
    found = evidence(lists, candidates, plan.query.dates, strict=plan.query.keyword_strict)
    return [
        RankedRow(s.key, s.score, s.ranks, found[s.key])
        for s in fuse(lists, candidates, config, names=names, dates=plan.query.dates)
    ]
