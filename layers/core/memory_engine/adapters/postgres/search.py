"""PostgreSQL adapter of the search index: runs the signal queries and reads result rows.

Three sources, each a module of statements over its table and scope: memory facts
(``search_memories``), document chunks (``search_documents``) and, with ``include: ["episodes"]``,
the searched memories' episodes (``search_episodes``); what they run alike is ``search_sql``.

Signals run concurrently in lanes, one per connection of search's pool (the default), or one
after another on one pooled connection (``parallel=False``); each source's candidate read joins
the lanes as soon as that source's lists are in, and the page's rows are read on the same
connections once the ranking is fused (:meth:`PostgresKnowledgeIndex._rank`).
docs/retrieval.md has the measurements that picked each (hybrid p95 at 100k facts + 100k chunks:
57 ms concurrent vs 117 ms one after another when this began; 14.5 ms in the session before
the generic plans, 23.8-24.2 ms after them on a machine about 1.5x slower).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Final, TypeVar

import psycopg

from memory_engine.adapters.postgres import bm25
from memory_engine.adapters.postgres import search_documents as docs
from memory_engine.adapters.postgres import search_entities as ents
from memory_engine.adapters.postgres import search_episodes as eps
from memory_engine.adapters.postgres import search_memories as mems
from memory_engine.adapters.postgres.database import Database, Row
from memory_engine.adapters.postgres.lanes import Lanes, bound, searching
from memory_engine.adapters.postgres.search_presence import DocumentPresence
from memory_engine.adapters.postgres.search_rows import (
    candidates_of,
    document_result,
    listed_episode,
    memory_result,
    page_rows,
)
from memory_engine.adapters.postgres.search_sql import Scoring
from memory_engine.adapters.postgres.stats_cache import StatsCache
from memory_engine.domain.search_config import Signal
from memory_engine.domain.search_models import (
    AnyResult,
    Candidate,
    DocumentScope,
    EpisodeResult,
    ListKey,
    MemoryScope,
    RankedLists,
    ResultKey,
    Scopes,
    ScoredKeys,
    SignalQuery,
    SourceType,
)
from memory_engine.domain.search_plan import RankedRow, Ranking, SearchPlan, fused_ranking, listed_candidates
from memory_engine.domain.supersession import Restatement
from memory_engine.domain.vectors import Vector
from memory_engine.ports.search import KnowledgeIndex

Task = Callable[[psycopg.Connection[Any]], "ScoredKeys | list[ResultKey]"]

#: A candidate read is split between free connections only into slices of at least this many rows:
#: a statement's fixed cost (planning, round trip: about 0.5 ms) is that of reading some 50 rows, so
#: a split saves wall time only when a slice reads more than its share of that.
MIN_READ_SLICE: Final = 25

_V = TypeVar("_V")
_K = TypeVar("_K")


@dataclass(frozen=True)
class SearchLimits:
    """The bounds a search's statements work within, today's values by default (a test narrows one
    to reach the case it checks): the keyword statement's reads (:class:`bm25.KeywordLimits`),
    the entity signal's hub rule (:class:`search_entities.HubRule`) and the smallest slice a
    candidate read is split into (:data:`MIN_READ_SLICE`)."""

    keyword: bm25.KeywordLimits = field(default_factory=bm25.KeywordLimits)
    hubs: ents.HubRule = field(default_factory=ents.HubRule)
    min_read_slice: int = MIN_READ_SLICE

    def __post_init__(self) -> None:
        if self.min_read_slice < 1:
            raise ValueError("a candidate read's slices hold at least one row")


#: The order signal tasks start in: the longest chain first (the entity signal is three to five
#: statements in a row, a keyword statement costs about twice a vector scan), so the last to start
#: is the shortest and the whole rank phase ends sooner when tasks outnumber the connections (two
#: on AWS, and search's own pool on a two-core machine). Interleaved A/B at 100k facts + 100k
#: chunks over two connections, 400 hybrid searches each: p50 / p95 15.01 / 19.02 -> 14.64 / 17.99
#: ms; over five connections no difference (docs/retrieval.md).
SUBMIT_ORDER: tuple[Signal, ...] = (Signal.ENTITY, Signal.KEYWORD, Signal.VECTOR, Signal.DATE, Signal.RECENCY)


def _in_submit_order(tasks: Mapping[Any, _V]) -> dict[Any, _V]:
    """The signal tasks keyed ``(source, signal)``, in :data:`SUBMIT_ORDER`."""
    return {name: tasks[name] for name in sorted(tasks, key=lambda name: SUBMIT_ORDER.index(name[1]))}


class PostgresKnowledgeIndex(KnowledgeIndex):
    """:class:`memory_engine.ports.search.KnowledgeIndex` over the schema of migrations/0001."""

    def __init__(self, database: Database, *, parallel: bool = True, max_workers: int = 5,
                 limits: SearchLimits = SearchLimits()) -> None:
        self._database = database
        self._parallel = parallel
        self._limits = limits
        self._lanes = Lanes(database, max_workers)
        self.scope_stats: StatsCache[bm25.ScopeStats] = StatsCache()
        self._column_stats: dict[str, bm25.ColumnStats] = {}
        self._column_stats_lock = threading.Lock()
        self._documents = DocumentPresence()

    # --- ranking ---------------------------------------------------------------------------
    def _tasks(self, project_id: str, q: SignalQuery, scopes: Scopes) -> dict[ListKey, Task]:
        tasks: dict[ListKey, Task] = {}
        # the lists in this order, signal by signal (RRF breaks ties by first appearance in it)
        sides = _scoped(scopes)
        if Signal.VECTOR in q.signals and q.embedding is not None:
            for source, (side, scope) in sides.items():
                tasks[source, Signal.VECTOR] = partial(side.vector, project_id=project_id, scope=scope, q=q)
        if Signal.KEYWORD in q.signals and q.text is not None:
            for source, (_, scope) in sides.items():
                tasks[source, Signal.KEYWORD] = partial(self._keyword_task, source=source, project_id=project_id,
                                                        scope=scope, q=q)
        m = scopes.memories
        if Signal.ENTITY in q.signals and m is not None:
            tasks[mems.SOURCE, Signal.ENTITY] = lambda conn: ents.entity_signal(
                conn, project_id, m, q, size=self._stats(conn, project_id, mems.SOURCE, m)[0], hubs=self._limits.hubs)
        if q.dates and m is not None:
            tasks[mems.SOURCE, Signal.DATE] = lambda conn: mems.dated(conn, project_id, m, q)
        if Signal.RECENCY in q.signals and m is not None:
            tasks[mems.SOURCE, Signal.RECENCY] = lambda conn: mems.recency(conn, project_id, m, q.depth)
        return tasks

    def _keyword_task(self, conn: psycopg.Connection[Any], *, source: SourceType, project_id: str,
                      scope: MemoryScope | DocumentScope, q: SignalQuery) -> ScoredKeys:
        stats = self._stats(conn, project_id, source, scope)
        return self._keyword(conn, _TABLES[source], partial(
            _SIDES[source].keyword, conn, project_id, scope, q, stats, limits=self._limits.keyword))

    def ranking(self, project_id: str, plan: SearchPlan) -> Ranking:
        return self._rank(project_id, plan)[1]

    def signal_lists(self, project_id: str, query: SignalQuery, scopes: Scopes) -> RankedLists:
        """The signals' lists alone (what RRF fuses)."""
        return self._signal_lists(self._tasks(project_id, query, scopes), query)

    def _signal_lists(self, tasks: Mapping[ListKey, Task], query: SignalQuery) -> RankedLists:
        return _ranked_in_order(tasks, self._run_all(_in_submit_order(tasks), query.ef_search))

    def _stats(self, conn: psycopg.Connection[Any], project_id: str, source: SourceType,
               scope: MemoryScope | DocumentScope) -> bm25.ScopeStats:
        side = _SIDES[source]
        return self.scope_stats.get((source, project_id, scope), lambda: side.scope_size(conn, project_id, scope))

    def _keyword(self, conn: psycopg.Connection[Any], table: str,
                 run: Callable[[bm25.ColumnStats], ScoredKeys]) -> ScoredKeys:
        """``run`` (a keyword statement) with ``table``'s lexeme shares as last read. The statement
        reports the table's statistics version, so no statement of its own checks it: when the table
        was analyzed since, the shares are read again and the statement runs again."""
        try:
            return run(self._shares(conn, table))
        except bm25.SharesOutdated:
            # analyzed again between this read and the statement: rare, and no older than just read
            return run(replace(self._shares(conn, table, fresh=True), analyzed=None))

    def _shares(self, conn: psycopg.Connection[Any], table: str, *, fresh: bool = False) -> bm25.ColumnStats:
        """The lexeme shares of ``table`` as last read (read now when ``fresh`` or never read)."""
        with self._column_stats_lock:
            column = None if fresh else self._column_stats.get(table)
        if column is None:
            column = bm25.column_stats(conn, table)
            with self._column_stats_lock:
                self._column_stats[table] = column
        return column

    def candidates(
        self, project_id: str, scopes: Scopes, ranked: RankedLists, embedding: Vector | None, *,
        top: Sequence[ResultKey], window: int, ef_search: int = 100, sources: Sequence[SourceType] = (),
    ) -> dict[ResultKey, Candidate]:
        """What fusion reads of the listed rows and of the neighbours of ``top``, each of ``sources``
        (all when empty) read at once."""
        results = self._run_all(self._reads_after_lists(project_id, scopes, ranked, embedding, top, window,
                                                        sources or SOURCES), ef_search)
        found: dict[ResultKey, Candidate] = {}
        for source, rows in results.items():
            found.update(candidates_of(source, rows, ranked))
        return found

    def lists_and_candidates(self, project_id: str, plan: SearchPlan) -> tuple[RankedLists, dict[ResultKey, Candidate]]:
        """The signals' lists and, for convex fusion, the candidates read (those of :meth:`ranking`)."""
        ranked, _ = self._rank(project_id, replace(plan, page=0))
        return ranked.lists, ranked.found

    def _rank(self, project_id: str, plan: SearchPlan) -> tuple[_Ranked, Ranking]:
        """:meth:`_rank_sources`, the documents left out for a project last seen without a chunk
        (:class:`DocumentPresence`): a statement of its facts checks it still has none, else the
        search runs again with them."""
        scopes = plan.scopes
        if scopes.documents is None or scopes.memories is None:
            return self._rank_sources(project_id, plan)
        leave_out, check = self._documents.plan(project_id)
        answer: list[bool] = []
        ranked = self._rank_sources(project_id, replace(plan, scopes=replace(scopes, documents=None)) if leave_out
                                    else plan, answer if check else None)
        if answer:
            self._documents.record(project_id, answer[0])
        if leave_out and (not answer or answer[0]):  # chunks since, or not checked: with them
            return self._rank_sources(project_id, plan)
        return ranked

    def _rank_sources(self, project_id: str, plan: SearchPlan,
                      documents: list[bool] | None = None) -> tuple[_Ranked, Ranking]:
        """:meth:`ranking` (and the rows of its page) in three phases over the lanes, each starting on the connections the one
        before holds: the signals' lists; for convex fusion, the candidate reads (the neighbours of
        ``plan.expanded``); then, in the lane that ends the last read, the fused ranking and the
        read of its first ``plan.page`` rows (with the pairs of its facts that state the same thing,
        :attr:`SearchPlan.reads_restatements`). Running in parallel, each source's candidates are
        read as soon as that source's lists are in (the neighbours of the best of that source's
        lists alone), on whichever connection is free: the two phases overlap instead of one
        waiting for the slowest statement of the other. The read is then a superset of the one
        after both sources' lists; :func:`memory_engine.domain.search_plan.fused_ranking` keeps
        the latter. One after another (one lane), each source is read after every list is in."""
        query, scopes = plan.query, plan.scopes
        tasks: dict[Any, Callable[[psycopg.Connection[Any]], Any]] = dict(self._tasks(project_id, query, scopes))
        if documents is not None and (fact := next((name for name in tasks if name[0] == mems.SOURCE), None)):
            tasks[fact] = self._documents.checking(tasks[fact], project_id, documents)  # whether chunks exist
        early = self._parallel and len(tasks) > 1
        waiting = {source: sum(1 for name in tasks if name[0] == source) for source in SOURCES}
        lists: dict[SourceType, dict[ListKey, Any]] = {source: {} for source in SOURCES}
        bookkeeping = threading.Lock()
        out: list[_Ranked] = []

        def then(name: Any, answer: Any, spare: int) -> dict[Any, Callable[[psycopg.Connection[Any]], Any]]:
            if not (early and plan.reads_candidates) or name[1] in (_READ, _PAGE):
                return {}
            source = name[0]
            with bookkeeping:  # lanes end tasks of one source at the same time
                lists[source][name] = answer
                waiting[source] -= 1
                if waiting[source]:
                    return {}
            own = _ranked_in_order(tasks, lists[source])
            if not plan.reads_rows(own, source):  # the lists hold all fusion reads of its rows
                return {}
            # with nothing else left to run, the read is split between the connections that are free
            reads = self._candidate_reads(project_id, scopes, own, source, query.embedding, plan.expanded(own),
                                          plan.window, parts=max(1, spare))
            return {(source, _READ, part): read for part, read in enumerate(reads)}

        def drained(done: dict[Any, Any]) -> dict[Any, Callable[[psycopg.Connection[Any]], Any]]:
            if out:  # the page was read
                return {}
            ranked = _ranked_in_order(tasks, done)
            read = [source for source in SOURCES if plan.reads_rows(ranked, source)]
            if not early and read and not any(name[1] == _READ for name in done):
                # one after another: each source read after every list
                work = self._reads_after_lists(project_id, scopes, ranked, query.embedding, plan.expanded(ranked),
                                               plan.window, read)
                if work:
                    return {(source, _READ, 0): task for source, task in work.items()}
            found: dict[ResultKey, Candidate] = {}
            for name, rows in done.items():
                if name[1] == _READ:
                    found.update(candidates_of(name[0], rows, ranked))
            if plan.reads_candidates:
                found |= _listed(ranked, [source for source in SOURCES if source not in read])
            rows = fused_ranking(plan, ranked, found)
            out.append(_Ranked(ranked, found, rows))
            # the page's rows, each source's in one statement: on as many of the lanes' connections
            page = [row.key for row in rows[: plan.page]]
            return {(source, _PAGE): partial(page_rows, source=source, project_id=project_id, ids=ids, plan=plan)
                    for source in SOURCES if (ids := [key for s, key in page if s == source])}

        done = self._lanes.run(_in_submit_order(tasks), query.ef_search, then=then, drained=drained,
                               lanes=None if self._parallel else 1)
        shown: dict[ResultKey, AnyResult] = {}
        pairs: list[Restatement] = []
        for name, page in done.items():
            if name[1] == _PAGE:
                shown.update(page.rows)
                pairs.extend(page.restated)
        return out[0], Ranking(out[0].rows, shown, tuple(pairs))

    def _reads_after_lists(
        self, project_id: str, scopes: Scopes, ranked: RankedLists, embedding: Vector | None,
        top: Sequence[ResultKey], window: int, sources: Sequence[SourceType],
    ) -> dict[SourceType, Callable[[psycopg.Connection[Any]], list[Row]]]:
        """Each of ``sources``' candidate read, in one statement, once every list is in (none for a
        source with nothing to read)."""
        return {source: reads[0] for source in sources
                if (reads := self._candidate_reads(project_id, scopes, ranked, source, embedding, top, window))}

    def _candidate_reads(
        self, project_id: str, scopes: Scopes, ranked: RankedLists, source: SourceType, embedding: Vector | None,
        top: Sequence[ResultKey], window: int, *, parts: int = 1,
    ) -> list[Callable[[psycopg.Connection[Any]], list[Row]]]:
        """The reads of ``source``'s listed rows and of the neighbours of its keys in ``top`` (none
        when there is nothing to read): up to ``parts`` reads of as many slices of the listed rows
        (each at least ``limits.min_read_slice`` rows; the first also reads the neighbours), to run at
        once on as many connections. A row found by two slices is the same row."""
        ids = list(dict.fromkeys(key for (s, _), keys in ranked.lists.items() if s == source for _, key in keys))
        near = [key for s, key in top if s == source] if window > 0 else []
        if not (ids or near):
            return []
        if source not in (sides := _scoped(scopes)):
            return []
        read: Callable[..., list[Row]] = partial(sides[source][0].candidate_rows, scope=sides[source][1])
        idfs, avgdl, avgcl = ranked.keyword_stats.get(source, ({}, 1.0, 1.0))
        # scores the signals already returned are not computed again
        scoring = Scoring(embedding, idfs, avgdl, avgcl,
                          known_similarity=[key for _, key in ranked.lists.get((source, Signal.VECTOR), [])],
                          known_bm25=[key for _, key in ranked.lists.get((source, Signal.KEYWORD), [])])
        parts = max(1, min(parts, len(ids) // self._limits.min_read_slice))
        size = -(-len(ids) // parts)
        return [partial(read, project_id=project_id, ids=ids[i * size:(i + 1) * size], top=near if i == 0 else [],
                        window=window, scoring=scoring) for i in range(parts)]

    def close(self) -> None:
        self._lanes.close()

    def _run_all(self, work: Mapping[_K, Callable[[psycopg.Connection[Any]], _V]], ef_search: int) -> dict[_K, _V]:
        """Every task of ``work`` in search transactions: in lanes when the index runs in parallel,
        else one after another on one connection."""
        return self._lanes.run(dict(work), ef_search, lanes=None if self._parallel else 1)

    def recent(self, project_id: str, scopes: Scopes, limit: int, *, raw: bool = False) -> list[AnyResult]:
        out: list[AnyResult] = []
        with self._database.connection() as conn, bound(conn):
            if scopes.memories is not None:
                out.extend(memory_result(r, raw=raw) for r in mems.recent_rows(conn, project_id, scopes.memories, limit))
            if scopes.documents is not None and len(out) < limit:
                rows = docs.ordered_rows(conn, project_id, scopes.documents, limit - len(out))
                out.extend(document_result(r) for r in rows)
        return out[:limit]

    def episodes(self, project_id: str, scope: MemoryScope, embedding: Vector | None, limit: int) -> list[EpisodeResult]:
        with self._database.connection() as conn, searching(conn, 100):
            rows = eps.first_window_rows(conn, project_id, scope, embedding, limit)
        return [listed_episode(r) for r in rows]


SOURCES: Final[tuple[SourceType, ...]] = (mems.SOURCE, docs.SOURCE, eps.SOURCE)
#: Each source's module of statements (:class:`search_sql.ScopedSource` s and their own): called
#: through the module, as ``mems.vector``, so a test may stand in for one.
_SIDES: Final[dict[SourceType, Any]] = {mems.SOURCE: mems, docs.SOURCE: docs, eps.SOURCE: eps}
_TABLES: Final[dict[SourceType, str]] = {
    mems.SOURCE: mems.FACTS.table, docs.SOURCE: docs.CHUNKS.table, eps.SOURCE: eps.EPISODES.table}


def _scoped(scopes: Scopes) -> dict[SourceType, tuple[Any, MemoryScope | DocumentScope]]:
    """The sources ``scopes`` searches, in :data:`SOURCES` order, each with its module and scope."""
    given: dict[SourceType, MemoryScope | DocumentScope | None] = {
        mems.SOURCE: scopes.memories, docs.SOURCE: scopes.documents, eps.SOURCE: scopes.episodes}
    return {source: (_SIDES[source], scope) for source, scope in given.items() if scope is not None}


#: The name of a source's candidate read among its signal tasks (``(source, _READ, part)``).
_READ: Final = "candidates"
#: The name of a source's read of the ranking's first rows (``(source, _PAGE)``), the last tasks.
_PAGE: Final = "page"


@dataclass(frozen=True)
class _Ranked:
    """A ranking with what it was fused from: the signals' lists and the candidates read."""

    lists: RankedLists
    found: dict[ResultKey, Candidate]
    rows: list[RankedRow]


def _ranked_in_order(tasks: Mapping[ListKey, Any], answers: Mapping[Any, Any]) -> RankedLists:
    """The answers of the signal ``tasks`` as :class:`RankedLists`, added in the tasks' own order
    whatever finished first (fusion sums over the lists in this order)."""
    out = RankedLists()
    for name in tasks:
        if name in answers:
            out.add(name, answers[name])
    return out


def _listed(ranked: RankedLists, sources: Sequence[SourceType]) -> dict[ResultKey, Candidate]:
    """The candidates of ``sources``, those whose rows fusion does not read (:meth:`SearchPlan.reads_rows`)."""
    found: dict[ResultKey, Candidate] = {}
    for source in sources:
        found.update(listed_candidates(ranked, source))
    return found

