"""BM25 in plain PostgreSQL (no extension beyond ``vector``): the keyword signal of search v2.

``ts_rank`` has no inverse document frequency and no length normalization. This scores the
GIN-matched candidates with Okapi BM25 (Robertson & Zaragoza; Lucene's ``k1 = 1.2, b = 0.75``):

    score(d) = Σ_t idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 - b + b · |d| / avgdl))
    idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

over the lexemes of ``to_tsvector('english', query)`` (stemmed, stop words dropped: the same
analyzer as the indexed column). Where the statistics come from, per query and scope:

- ``df(t)``: the rows *in the searched scope* containing ``t``, found through the GIN index, at
  most ``DF_CAP`` per lexeme and ``HITS_BUDGET`` per query, rarest lexemes first (their share of
  the column's rows in the planner statistics, ``pg_stats.most_common_elems``, refreshed by
  autovacuum's analyze and read by the search adapter once per analyze, :class:`ColumnStats`: a
  lexeme absent from that list is rarer than all in it). A lexeme the budget or the cap cut short
  counts as the larger of what was found and its share of ``N``, and at least one row: a lexeme
  the budget never reached is one the statistics call rare, not one the scope lacks (a name rare
  in the table but on every fact of one memory spends the budget before it). So the work per
  query is bounded whatever the table's size, and on small scopes df is exact.
- ``N`` and ``avgdl``: the scope's live rows and their average length, from the search
  adapter's scope statistics (cached per scope for a few minutes: an IDF statistic, not a
  result; a result row is always read live).
- ``|d|`` is ``search_tokens``, the number of indexed tokens of the row's own text (migration
  0008), as a plain BM25 index counts length; ``tf`` counts a lexeme's positions. A fact's
  ``context`` (weight B: the neighbouring turns, at most 2,000 characters) is a second field
  (BM25F, Robertson et al. 2004): its positions add :data:`CONTEXT_WEIGHT` each to the tf *after*
  the row's own count is length-normalized, and its length normalizes nothing. The context is a
  window clipped to a fixed size, so its length says nothing about the row's verbosity, while
  counting it in ``|d|`` (as ``length(search_tsv)``, distinct lexemes of both, did) weighed a long
  turn's own words against its neighbours'. On BEAM's long technical messages that put the keyword
  signal 0.05 R@10 below a plain BM25 index over the same messages (docs/retrieval.md).

Which rows are read first: when the scanned lexemes' rows are more than the budget (their shares
times ``N``), the rows holding two of them, pair by pair from the rarest pair (each such row is
found by both lexemes), then each lexeme's rows, rarest first (once the rarest lexeme alone fills
the budget, a read of its rows in the index's order finds rows that hold nothing else of the query,
and BM25's best rows are those that hold several of its rare words). The budget counts rows read
(what a statement's work is): a row a pair finds is one read, not one per lexeme. On the 28 BEAM
dev conversations written into one memory of 13,610 rows, keyword-only R@10 0.246 with
single-lexeme reads, 0.331 with pairs first, 0.338 with a pair's row one read, 0.359 reading every
hit, plain BM25 0.357 (docs/retrieval.md). A scope whose rows all fit is read as before, lexeme by
lexeme.

Ranking runs in two stages inside one statement: every row found is scored by the idf of the
lexemes it was found by (nothing of the row is read: a chunk's tsvector is often stored out of
line, and reading even its length for every hit made a 3.6 ms statement over SciFact's abstracts
0.9 ms slower), then the best :func:`rescored` rows (twice the list's depth) are rescored exactly
(every query lexeme, real tf and length) from their tsvector.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres.lanes import PlanValue
from memory_engine.domain.search_models import ScoredKeys, SignalQuery, SourceType

K1: Final = 1.2
B: Final = 0.75
#: Rows read per query lexeme through the GIN index (its df is exact below this) ...
DF_CAP: Final = 1_000
#: ... and rows read for the whole query, rarest lexemes first (planner statistics order them): enough to
#: find the rows the exact pass rescores. Reading hits is most of a statement's work (a heap page
#: each); 600 -> 400 took 0.48 ms off each keyword statement at 100k for SciFact nDCG@10 -0.002
#: (keyword alone and hybrid) and LoCoMo hybrid R@10 unchanged (docs/retrieval.md).
HITS_BUDGET: Final = 400
#: A lexeme the planner statistics put in more rows of the whole table than this is not read
#: through the GIN index (its df is its share of the scope, and a bitmap scan reads its whole posting
#: list, which grows with the table), unless it is the query's rarest.
SCAN_CAP: Final = 10 * DF_CAP
#: Rows rescored with their real term frequencies after the tf = 1 pass: twice the list's depth
#: (:func:`rescored`), so the exact pass can bring up rows from below the cut.
RESCORE_HEADROOM: Final = 2.0
#: Weight of a position labelled B (a fact's ``context``); other positions (D, the default) count 1.
CONTEXT_WEIGHT: Final = 0.5


@dataclass(frozen=True)
class KeywordLimits:
    """The bounds of a keyword statement's reads, written into its text: :data:`HITS_BUDGET` and
    :data:`SCAN_CAP` by default, and the largest scope that counts its lexemes in its own rows
    (:func:`counts_locally`, :data:`DF_CAP`); the search adapter's ``SearchLimits`` may narrow them."""

    hits_budget: int = HITS_BUDGET
    scan_cap: int = SCAN_CAP
    local_scope: int = DF_CAP

    def __post_init__(self) -> None:
        if not all(type(n) is int and n > 0 for n in (self.hits_budget, self.scan_cap)) or self.local_scope < 0:
            raise ValueError(f"keyword limits are positive integers: {self}")


#: A pair's rows from its two words' counted rows (``p.ids``, ``p.ids2``): those both hold, in the order
#: of the first's (the index's; :func:`keyword_sql`).
_BOTH_COUNTED: Final = "SELECT u.id FROM unnest(p.ids) WITH ORDINALITY u(id, n) JOIN unnest(p.ids2) v(id) USING (id)"


def rescored(depth: int) -> int:
    """How many of the tf = 1 pass's best rows a list of ``depth`` rows rescores exactly."""
    return max(1, int(depth * RESCORE_HEADROOM))


def _positions_of(tsv: str, lexemes: str) -> str:
    """``(lexeme, positions, weights)`` of ``tsv`` for the ``lexemes`` (a ``text[]``) only. The
    stored columns use weights D and B; relabelled A, the lexemes' positions are picked out in C
    (``setweight``, ``ts_filter``) instead of unnesting every lexeme of the row: rescoring 60 rows
    0.70 -> 0.49 ms a statement over facts, 0.60 -> 0.42 ms over chunks, identical scores."""
    return f"unnest(ts_filter(setweight({tsv}, 'A', {lexemes}), '{{a}}'))"


def bm25_expr(row: str, idf_source: str, lexemes: str, *, context: bool = True) -> str:
    """The BM25 score of the row aliased ``row`` (a ``search_tsv`` column) given ``idf_source``, a
    relation aliased ``i`` with columns ``(lexeme, idf)``, and ``lexemes``, its lexemes as a
    ``text[]`` expression; needs ``%(avgdl)s`` (the scope's mean ``search_tokens``). A lexeme's tf
    is its own positions length-normalized plus its context's (weight B) at :data:`CONTEXT_WEIGHT`
    each (the module docstring: BM25F with no length normalization of the context)."""
    own = f"coalesce(array_length(p.positions, 1), 0) / (1 - {B} + {B} * {row}.search_tokens / %(avgdl)s::float8)"
    if not context:  # a table without a context field (document chunks)
        return f"""(SELECT coalesce(sum(i.idf * t.tf * {K1 + 1} / (t.tf + {K1})), 0)::float8
               FROM (SELECT p.lexeme, {own} AS tf FROM {_positions_of(f"{row}.search_tsv", lexemes)} p) t
               JOIN {idf_source} ON i.lexeme = t.lexeme)"""  # noqa: S608 - fixed fragments and module constants; values are bound parameters
    ctx = "coalesce(array_length(c.positions, 1), 0)"
    ctx_norm = f"(1 - {B} + {B} * {row}.context_tokens / %(avgcl)s::float8)"
    return f"""(SELECT coalesce(sum(i.idf * t.tf * {K1 + 1} / (t.tf + {K1})), 0)::float8
               FROM (SELECT p.lexeme, (coalesce(array_length(p.positions, 1), 0) - {ctx})
                                      / (1 - {B} + {B} * {row}.search_tokens / %(avgdl)s::float8)
                                      + {CONTEXT_WEIGHT} * {ctx} / {ctx_norm} AS tf
                     FROM {_positions_of(f"{row}.search_tsv", lexemes)} p
                     LEFT JOIN {_positions_of(f"ts_filter({row}.search_tsv, '{{b}}')", lexemes)} c USING (lexeme)) t
               JOIN {idf_source} ON i.lexeme = t.lexeme)"""  # noqa: S608 - fixed fragments and module constants; values are bound parameters


@dataclass(frozen=True)
class ColumnStats:
    """The planner's statistics of a table's ``search_tsv`` as the keyword statement reads them:
    ``shares``, a JSON object of the most common lexemes and the share of the rows each is in
    (bound as ``jsonb``: one parameter whatever the list's length), and ``total``, the table's row
    count estimate. Both ``{}`` / 0 before the table was first analyzed. ``analyzed`` is the
    version they were read at (:func:`analyzed`); a keyword statement given them checks that it
    is still the table's, and :func:`rank` raises :class:`SharesOutdated` when it is not
    (``None``: not checked). ``describes`` is the largest scope they still describe: ``total`` and
    the growth autovacuum lets a table take before it analyzes it again
    (``autovacuum_analyze_threshold + autovacuum_analyze_scale_factor · reltuples``, the table's
    own settings where it has them; 0: ``total``)."""

    shares: str
    total: float
    analyzed: int | None = None
    describes: float = 0.0


class SharesOutdated(Exception):
    """The table was analyzed since its :class:`ColumnStats` were read: read them again and rerun."""


def column_stats(conn: psycopg.Connection[Any], table: str) -> ColumnStats:
    """``table``'s :class:`ColumnStats`, read from ``pg_stats`` (refreshed by autovacuum's analyze)
    with their version. The search adapter reads them once per version, not in every keyword
    statement: read there, they cost 0.7 ms of each statement's 4-5 ms (planning the ``pg_stats``
    view, casting its array)."""
    row = conn.execute(column_stats_sql(table)).fetchone()
    if row is None:
        return ColumnStats("{}", 0.0)
    shares = dict(zip(row["elems"] or [], (float(f) for f in row["freqs"] or []), strict=False))
    return ColumnStats(json.dumps(shares), float(row["total"] or 0.0), int(row["analyzed"]), float(row["describes"] or 0.0))


def analyzed_sql(table: str) -> str:
    """How many times ``table`` has been analyzed, by hand or by autovacuum: the version of its
    planner statistics (a counter in shared memory, no table is read). Shares used across an
    ``ANALYZE`` are wrong in the way that matters most: a lexeme common in rows loaded since is
    taken for a rare one, read first, and spends the hits budget (LoCoMo, five conversations
    loaded one after another: keyword-only R@10 0.706 -> 0.431 with the first one's shares)."""
    return f"(pg_stat_get_analyze_count('{table}'::regclass) + pg_stat_get_autoanalyze_count('{table}'::regclass))"


def analyzed(conn: psycopg.Connection[Any], table: str) -> int:
    """:func:`analyzed_sql`, read on its own."""
    row = conn.execute(f"SELECT {analyzed_sql(table)} AS n").fetchone()
    return int(row["n"]) if row else 0


def _autovacuum(setting: str) -> str:
    """The table's own ``setting`` (a storage parameter) where it has one, else the server's (``c``: its ``pg_class`` row)."""
    return (f"coalesce((SELECT o.option_value::float8 FROM pg_options_to_table(c.reloptions) o"  # noqa: S608 - setting: a fixed name from this module
            f" WHERE o.option_name = '{setting}'), current_setting('{setting}')::float8)")


def column_stats_sql(table: str) -> str:
    """``(analyzed, elems, freqs, total, describes)``: the version of ``table``'s planner statistics,
    its most common lexemes of ``search_tsv``, the share of rows each is in, the table's row count
    estimate and the largest scope the statistics describe (:class:`ColumnStats`; one row;
    ``elems`` NULL before the table was first analyzed)."""
    return (
        f"SELECT {analyzed_sql(table)} AS analyzed, s.elems, s.freqs, t.total,"  # noqa: S608 - fixed fragments and module constants; values are bound parameters
        f" t.total * (1 + t.scale) + t.threshold AS describes"
        f" FROM (SELECT greatest(c.reltuples, 0)::float8 AS total, {_autovacuum('autovacuum_analyze_scale_factor')} AS scale,"
        f" {_autovacuum('autovacuum_analyze_threshold')} AS threshold FROM pg_class c WHERE c.oid = '{table}'::regclass) t"
        " LEFT JOIN LATERAL ("
        " SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs FROM pg_stats"
        f" WHERE schemaname = current_schema() AND tablename = '{table}' AND attname = 'search_tsv' LIMIT 1) s ON true"
    )


#: ``(N, avgdl, avgcl)``: a scope's rows, their mean own length and mean context length in tokens.
ScopeStats = tuple[int, float, float]


def counts_locally(n: int, column: ColumnStats, limits: KeywordLimits = KeywordLimits()) -> bool:
    """Whether a scope of ``n`` rows orders and counts the query's lexemes by its own rows instead of
    the table's planner statistics: when it is small (at most ``limits.local_scope`` rows, by default
    :data:`DF_CAP`, so a lexeme's count reads no more rows than one lexeme's hits do), or when the
    statistics cannot describe it: never gathered, or gathered when the whole table was so much
    smaller than this scope is now that autovacuum would have analyzed it again
    (``ColumnStats.describes``). Not merely larger than ``reltuples``: that is an estimate, and a
    scope holding the whole table read as larger than it about half the time (100,000 facts,
    ``reltuples`` 99,991), counted locally, and took hybrid search from 14 / 20 ms to 28 / 50 ms
    (p50 / p95) at 100k and to 106 / 200 ms at 1M."""
    return n <= limits.local_scope or column.total <= 0 or n > max(column.total, column.describes)


def keyword_sql(*, table: str, alias: str, from_sql: str, scope_sql: str, hits_from: str | None = None,
                hits_scope: str | None = None, strict: bool = False, local: bool = False,
                limits: KeywordLimits = KeywordLimits(), context: bool = False) -> str:
    """One statement: the ``%(depth)s`` best rows by BM25 for ``%(text)s`` within ``scope_sql``,
    as ``(id, score, idfs, analyzed)``; ``idfs`` (on one row, NULL on the others: the client parses
    it once) maps each scored lexeme to its idf so other candidates can be scored alike, and
    ``analyzed`` (on the same row) is the table's statistics version now (:func:`analyzed_sql`).
    Parameters: ``text``, ``n``, ``avgdl``, ``depth``, ``rescore``, the table's
    :class:`ColumnStats` (``shares``, ``total``) and the scope's. With ``strict`` (the caller wrote
    websearch syntax) only rows matching ``websearch_to_tsquery`` are ranked. ``hits_from``/
    ``hits_scope`` may be a cheaper superset of the scope to find and count rows by (df); the
    best of them are then checked against the full scope before they are rescored. ``context``:
    the table's rows have the context field (:func:`bm25_expr`)."""
    a = alias
    if hits_from:
        recheck_from = f" JOIN {from_sql} ON {a}.id = best.id WHERE {scope_sql}"
    else:
        recheck_from = ""
    hits_from, hits_scope = hits_from or from_sql, hits_scope or scope_sql
    if strict:  # the rows the query's syntax matches, not the best of the lexemes' hits
        picked = f"""picked AS (
            SELECT {a}.id FROM {from_sql}
            WHERE {scope_sql} AND {a}.search_tsv @@ websearch_to_tsquery('english', %(text)s)
            LIMIT %(rescore)s
        )"""  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
    else:
        picked = "picked AS (SELECT id FROM coarse)"
    first = "row_number() OVER () = 1"

    def gin_read(tsq: str, when: str = "") -> str:
        """The scope's rows matching ``tsq`` (a column of the statement), through the GIN index, DF_CAP at
        most (none unless ``when``, a condition, holds)."""
        cond = f"{a}.search_tsv @@ {tsq}" + (f" AND {when}" if when else "")
        return f"SELECT {a}.id FROM {hits_from} WHERE {hits_scope} AND {cond} LIMIT {DF_CAP}"  # noqa: S608 - fixed fragments and module constants

    if local:  # each lexeme's share of the scope's own rows (at most DF_CAP counted); every lexeme read
        # MATERIALIZED: inlined into q, each count ran for q's order and again for its column. The rows
        # counted are kept, in the order the read returned them, for the reads below.
        shares = f"""shares AS MATERIALIZED (
            SELECT l.lexeme, l.tsq, 0::float8 AS total, r.ids,
                   coalesce(cardinality(r.ids), 0)::float8 / greatest(%(n)s::float8, 1) AS share
            FROM (SELECT lexeme, quote_literal(lexeme)::tsquery AS tsq
                  FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) lexeme) l
            CROSS JOIN LATERAL (SELECT array_agg(c.id) AS ids FROM ({gin_read("l.tsq")}) c) r
        )"""  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
    else:
        shares = """shares AS (
            SELECT l.lexeme, quote_literal(l.lexeme)::tsquery AS tsq,
                   coalesce((%(shares)s::jsonb ->> l.lexeme)::float8, 0) AS share, %(total)s::float8 AS total,
                   NULL::text[] AS ids
            FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) l(lexeme)
        )"""
    # A counted scope reads a word's rows from its count and a pair's from its words' counts (the rows
    # both hold, unless a count stopped at DF_CAP): the same rows in the same order as the GIN reads,
    # which read each of them again (docs/retrieval.md, "The keyword statement lists its reads once").
    single_read, pair_read = gin_read("q.tsq"), gin_read("p.tsq")
    if local:
        counted = f"cardinality(p.ids) < {DF_CAP} AND cardinality(p.ids2) < {DF_CAP}"
        single_read = "SELECT u.id FROM unnest(q.ids) WITH ORDINALITY u(id, n) ORDER BY u.n"
        pair_read = (f"({_BOTH_COUNTED} WHERE {counted} ORDER BY u.n)"
                     f" UNION ALL ({gin_read('p.tsq', when=f'NOT ({counted})')})")
    return f"""
        WITH {shares}, q AS MATERIALIZED (
            SELECT lexeme, tsq, share, ids, row_number() OVER (ORDER BY share, lexeme) AS ord,
                   share * total <= {limits.scan_cap} AS scanned FROM shares
        ), pairs AS (  -- only when the single reads would not all fit in the budget (module docstring)
            SELECT x.lexeme AS a, y.lexeme AS b, x.tsq && y.tsq AS tsq, y.ord AS ord2, x.ord AS ord1, x.ids, y.ids AS ids2
            FROM q x JOIN q y ON x.ord < y.ord WHERE (x.scanned OR x.ord = 1) AND y.scanned
              AND (SELECT sum(share) FROM q WHERE scanned OR ord = 1) * %(n)s > {limits.hits_budget}
        ), reads AS MATERIALIZED (  -- the budget counts rows read: a pair's row is one read
            SELECT f.a, f.ord1, f.b, f.ord2, f.id, f.phase FROM (
                SELECT p.a, p.ord1, p.b, p.ord2, h.id, 0 AS phase
                FROM (SELECT * FROM pairs ORDER BY ord2, ord1) p
                CROSS JOIN LATERAL (
                    {pair_read}
                ) h
                UNION ALL
                SELECT q.lexeme, q.ord, NULL, NULL, h.id, 1 AS phase
                FROM (SELECT lexeme, tsq, ids, ord FROM q WHERE scanned OR ord = 1 ORDER BY ord) q
                CROSS JOIN LATERAL (
                    {single_read}
                ) h
            ) f
            LIMIT {limits.hits_budget}
        ), hits AS MATERIALIZED (  -- each read under each lexeme it was found by (UNION: a row found
            -- by a pair and by its lexeme's own read counts once)
            SELECT a AS lexeme, ord1 AS ord, id FROM reads UNION SELECT b, ord2, id FROM reads WHERE b IS NOT NULL
        ), counted AS (
            SELECT q.lexeme, q.share, coalesce(h.found, 0) AS found,
                   (q.scanned OR q.ord = 1) AND coalesce(s.single, 0) < {DF_CAP}
                   AND (t.total < {limits.hits_budget} OR (t.phase = 1 AND q.ord < t.last)) AS complete
            FROM q LEFT JOIN (SELECT lexeme, count(*) AS found FROM hits GROUP BY lexeme) h USING (lexeme)
                 LEFT JOIN (SELECT a AS lexeme, count(*) AS single FROM reads WHERE phase = 1 GROUP BY a) s USING (lexeme),
                 (SELECT count(*) AS total, max(phase) AS phase,
                         coalesce(max(ord1) FILTER (WHERE phase = 1), 0) AS last FROM reads) t
        ), idf AS MATERIALIZED (
            SELECT lexeme, ln(1 + (greatest(%(n)s, df) - df + 0.5) / (df + 0.5)) AS idf FROM (
                SELECT lexeme, (CASE WHEN complete THEN found ELSE greatest(found, share * %(n)s, 1) END)::float8 AS df
                FROM counted) c
        ), coarse AS (
            SELECT best.id, best.s FROM (
                SELECT h.id, sum(i.idf) AS s FROM hits h JOIN idf i USING (lexeme)
                GROUP BY h.id ORDER BY s DESC, h.id LIMIT {"2 * %(rescore)s" if recheck_from else "%(rescore)s"}
            ) best{recheck_from}
            ORDER BY best.s DESC, best.id LIMIT %(rescore)s
        ), {picked}
        SELECT id, score, CASE WHEN {first} THEN (SELECT json_object_agg(lexeme, idf) FROM idf) END AS idfs,
               CASE WHEN {first} THEN {analyzed_sql(table)} END AS analyzed
        FROM (SELECT x.id, {bm25_expr("x", "idf i", "ARRAY(SELECT lexeme FROM idf)", context=context)} AS score
              FROM picked JOIN {table} x ON x.id = picked.id
              ORDER BY score DESC, x.id LIMIT %(depth)s) ranked
        ORDER BY score DESC, id"""  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound


def scope_stats(conn: psycopg.Connection[Any], *, alias: str, from_sql: str, scope_sql: str,
                params: dict[str, Any], context: bool) -> ScopeStats:
    """``(N, avgdl, avgcl)`` of a scope: its searchable rows, their mean ``search_tokens`` and, with
    ``context``, their mean ``context_tokens`` (else 0)."""
    avgcl = f"coalesce(avg({alias}.context_tokens), 0)" if context else "0"
    columns = f"count(*) AS n, coalesce(avg({alias}.search_tokens), 0) AS avgdl, {avgcl} AS avgcl"
    row = conn.execute(
        f"SELECT {columns} FROM {from_sql} WHERE {scope_sql}",  # noqa: S608 - fixed fragments and module constants; PlanValue parameters are quoted into the text by psycopg (lanes), the rest bound
        params,
    ).fetchone()
    return (int(row["n"]), float(row["avgdl"]), float(row["avgcl"])) if row else (0, 0.0, 0.0)


def rank(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any], *, source: SourceType, table: str,
         q: SignalQuery, stats: ScopeStats, column: ColumnStats) -> ScoredKeys:
    """Runs a :func:`keyword_sql` statement: the best rows with their BM25 scores, the query's idf
    map and the scope's ``avgdl`` (nothing for an empty scope). Raises :class:`SharesOutdated` when
    ``column`` has a version and ``table`` was analyzed since (the statement reports its version;
    an empty answer is checked with one more small statement)."""
    n, avgdl, avgcl = stats
    if n == 0:
        return ScoredKeys([], [])
    avgdl, avgcl = max(avgdl, 1.0), max(avgcl, 1.0)
    rows = conn.execute(sql, params | {"text": q.text, "depth": PlanValue(q.depth), "n": n, "avgdl": avgdl, "avgcl": avgcl,
                                       "shares": column.shares, "total": column.total,
                                       "rescore": PlanValue(rescored(q.depth))}).fetchall()
    if column.analyzed is not None:
        version = rows[0]["analyzed"] if rows else analyzed(conn, table)
        if version != column.analyzed:
            raise SharesOutdated(table)
    idfs = dict(next((row["idfs"] for row in rows if row["idfs"] is not None), {}))
    return ScoredKeys([(source, r["id"]) for r in rows], [float(r["score"]) for r in rows], idfs=idfs, avgdl=avgdl, avgcl=avgcl)


def score_columns(alias: str, *, with_bm25: bool, context: bool, cosine: str) -> str:
    """``similarity, bm25`` of a candidate row aliased ``alias``: its cosine to ``%(embedding)s``
    (``cosine``: how the row's is computed, NULL without a vector: its table's
    ``search_sql.SearchTable.cosine``) and its BM25 under ``%(lexemes)s``/``%(idfs)s``, NULL where a
    signal already returned them (``%(known_similarity)s``, ``%(known_bm25)s``); see :func:`score_params`."""
    a = alias
    given = bm25_expr(a, "unnest(%(lexemes)b::text[], %(idfs)s::float8[]) i(lexeme, idf)", "%(lexemes)b::text[]",
                      context=context)
    bm25_sql = f"CASE WHEN {a}.id = ANY(%(known_bm25)b::text[]) THEN NULL ELSE {given} END" if with_bm25 else "0::float8"
    return (
        f"CASE WHEN %(embedding)s::vector IS NULL OR {a}.id = ANY(%(known_similarity)b::text[])"
        f" THEN NULL ELSE {cosine} END AS similarity, {bm25_sql} AS bm25"
    )


def score_params(embedding: Any, idfs: dict[str, float], avgdl: float, avgcl: float, known_similarity: Sequence[str],
                 known_bm25: Sequence[str]) -> dict[str, Any]:
    return {
        "embedding": embedding, "lexemes": list(idfs), "idfs": list(idfs.values()),
        "avgdl": max(avgdl, 1.0), "avgcl": max(avgcl, 1.0),
        "known_similarity": list(known_similarity), "known_bm25": list(known_bm25),
    }
