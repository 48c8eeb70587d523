"""Two source trees' SQL for the same searches, timed statement by statement on one connection.

    .venv/bin/python bench/statement_ab.py --pgdata /tmp/stmt-ab/pgdata --tree /path/to/before --tree .
        [--size 100000] [--match "WITH shares AS"] [--queries 200] [--rounds 4] [--preset hybrid] [--small-memory]

Whole-search A/Bs (bench/search_stages.py, bench/search_latency.py) on a shared 2-core machine move by
10-15 % from run to run, more than a change to one statement saves; running the two versions of each
statement back to back does not drift. The first run seeds ``--pgdata`` (kept for the next runs): one
memory of ``--size`` facts and as many one-chunk documents, as bench/search_latency.py seeds them (real
sentences, random unit vectors), then analyzed; ``--small-memory`` searches a memory of 500 of those facts
(copied with their entity links into the same project on first use), whose keyword statement counts the query's words in the
scope's own rows as a LoCoMo-size memory's does (``bm25.counts_locally``). Each tree, in a process of its own that imports its
``layers/core``, runs the searches of ``--queries`` SciFact claims one after another (``--preset``,
``query_embedding`` given) and records the statements whose text holds ``--match`` as they were sent
(the plan values written in, the rest parameters). This process then runs each pair (tree A's and tree
B's statement of the same search) on one connection, prepared, generic plans as search runs them, in
alternating order, ``--rounds`` times, and prints each tree's mean / p50 / p95 per statement, the mean
and median of B - A, and how many pairs returned the same rows (ids and scores to 9 decimals).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "scifact"
PROJECT, MEMORY, DIM = "proj_bench", "mem_bench", 384
#: ``--small-memory``: its id and size.
SMALL_MEMORY, SMALL_SIZE = "mem_small", 500


def encode_params(params: Any) -> dict[str, Any]:
    """A statement's parameters as JSON: the plan values (already written into its text) left out, a
    vector as ``{"vector": [...]}``; the rest (text, numbers, lists) as they are."""
    out: dict[str, Any] = {}
    for name, value in dict(params or {}).items():
        if type(value).__name__ == "PlanValue":
            continue
        out[name] = {"vector": [float(x) for x in value]} if hasattr(value, "dtype") else value
    return out


def decode_params(params: dict[str, Any]) -> dict[str, Any]:
    """:func:`encode_params` undone (a vector back to a numpy array, which pgvector binds as ``vector``)."""
    import numpy as np

    return {name: np.asarray(value["vector"], dtype=np.float32) if isinstance(value, dict) and "vector" in value
            else value for name, value in params.items()}


def capture(args: argparse.Namespace) -> None:
    """In a tree's own process: the matching statements of the searches, in order, to ``args.out``."""
    sys.path.insert(0, str(Path(args.tree[0]).resolve() / "layers" / "core"))
    sys.path.insert(0, str(REPO / "bench"))
    import psycopg

    import memory_engine
    import search_latency  # after the tree's memory_engine: its own imports resolve to that package
    from memory_engine.adapters.postgres.database import Database
    from memory_engine.adapters.postgres.search import PostgresKnowledgeIndex

    print(f"{args.tree[0]}: memory_engine from {Path(memory_engine.__file__).parent}", file=sys.stderr)

    seen: list[dict[str, Any]] = []
    execute = psycopg.Cursor.execute

    def recording(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if isinstance(query, str) and args.match in query:
            seen.append({"query": query, "params": encode_params(params)})
        return execute(self, query, params, **kwargs)

    psycopg.Cursor.execute = recording  # type: ignore[method-assign]
    database = Database(args.url, max_size=1)
    index = PostgresKnowledgeIndex(database, parallel=False)
    search_latency.time_preset(index, PROJECT, SMALL_MEMORY if args.small_memory else MEMORY,
                               search_latency.load_queries(DATA / "queries.jsonl", args.queries), args.preset)
    index.close()
    database.close()
    Path(args.out).write_text(json.dumps(seen))


def seed(url: str, size: int) -> None:
    """bench/search_latency.py's database at one size, unless ``url`` holds it already."""
    sys.path.insert(0, str(REPO / "layers" / "core"))
    from memory_engine.adapters.postgres.database import Database
    from memory_engine.adapters.postgres.migrations import migrate
    from memory_engine.evaluation import synthetic

    migrate(url, embedding_dim=DIM)
    database = Database(url)
    with database.connection() as conn:
        row = conn.execute("SELECT count(*) AS n FROM memory_entries WHERE memory_id = %s", (MEMORY,)).fetchone()
        if row and row["n"]:
            if row["n"] != size:
                raise SystemExit(f"--pgdata holds {row['n']:,} facts, not {size:,}: give another --pgdata")
            small_memory(conn)
            database.close()
            return
        conn.execute("INSERT INTO projects (id, name) VALUES (%s, 'bench') ON CONFLICT DO NOTHING", (PROJECT,))
        conn.execute("INSERT INTO memories (id, project_id, name) VALUES (%s, %s, 'bench') ON CONFLICT DO NOTHING",
                     (MEMORY, PROJECT))
    started, texts = time.perf_counter(), synthetic.sentences(DATA / "corpus.jsonl")
    with synthetic.VectorIndexesDeferred(database):
        synthetic.load_facts(database, PROJECT, MEMORY, texts, size, dim=DIM)
        synthetic.load_chunks(database, PROJECT, texts, size, dim=DIM, seed=size)
    with database.connection() as conn:
        small_memory(conn)
    synthetic.settle(url)
    database.close()
    print(f"seeded {size:,} facts + {size:,} chunks in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def small_memory(conn: Any) -> None:
    """The ``--small-memory`` memory: the first :data:`SMALL_SIZE` facts of the big one, copied (the
    generated columns computed again) with their entity links, unless it is there."""
    row = conn.execute("SELECT count(*) AS n FROM memory_entries WHERE memory_id = %s", (SMALL_MEMORY,)).fetchone()
    if not (row and row["n"]):
        _copy_facts(conn)
    linked = conn.execute("SELECT EXISTS (SELECT 1 FROM entry_entities l JOIN memory_entries e ON e.id = l.entry_id"
                          " WHERE e.memory_id = %s) AS yes", (SMALL_MEMORY,)).fetchone()
    if not (linked and linked["yes"]):
        conn.execute("INSERT INTO entry_entities (entry_id, entity_id, role, memory_id)"
                     " SELECT s.id, l.entity_id, l.role, s.memory_id FROM memory_entries s"
                     " JOIN entry_entities l ON l.entry_id = substr(s.id, 7) WHERE s.memory_id = %s", (SMALL_MEMORY,))
        conn.execute("ANALYZE entry_entities")


def _copy_facts(conn: Any) -> None:
    conn.execute("INSERT INTO memories (id, project_id, name) VALUES (%s, %s, 'small') ON CONFLICT DO NOTHING",
                 (SMALL_MEMORY, PROJECT))
    columns = [r["column_name"] for r in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory_entries'"
        " AND is_generated = 'NEVER' ORDER BY ordinal_position").fetchall()]
    copied = ", ".join({"id": "'small_' || id", "memory_id": "%(memory)s"}.get(c, c) for c in columns)
    conn.execute(f"INSERT INTO memory_entries ({', '.join(columns)}) SELECT {copied} FROM memory_entries"
                 " WHERE memory_id = %(big)s ORDER BY id LIMIT %(size)s",
                 {"memory": SMALL_MEMORY, "big": MEMORY, "size": SMALL_SIZE})
    conn.execute("ANALYZE memory_entries")


def replay(url: str, arms: list[list[dict[str, Any]]], rounds: int) -> tuple[list[list[float]], int]:
    """Each pair of statements run back to back on one connection, in one search transaction (its
    settings: ``lanes.searching``), the order alternating: the milliseconds of each arm's runs and how
    many runs of a pair returned the same rows."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    from memory_engine.adapters.postgres.lanes import searching

    times: list[list[float]] = [[] for _ in arms]
    same = 0
    with psycopg.connect(url, row_factory=dict_row) as conn, searching(conn, 100):
        register_vector(conn)
        pairs = [[(s["query"], decode_params(s["params"])) for s in statements] for statements in zip(*arms, strict=True)]
        for pair in pairs:  # prepared once each before the first timed run
            for query, params in pair:
                conn.execute(query, params, prepare=True).fetchall()
        for turn in range(rounds):
            for i, pair in enumerate(pairs):
                order = range(len(pair)) if (turn + i) % 2 == 0 else reversed(range(len(pair)))
                answers: dict[int, list[tuple[Any, ...]]] = {}
                for arm in order:
                    query, params = pair[arm]
                    started = time.perf_counter()
                    rows = conn.execute(query, params, prepare=True).fetchall()
                    times[arm].append((time.perf_counter() - started) * 1000)
                    answers[arm] = [tuple(round(v, 9) if isinstance(v, float) else v for v in row.values()) for row in rows]
                same += all(answer == answers[0] for answer in answers.values())
    return times, same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="compare", choices=("compare", "capture"))
    parser.add_argument("--pgdata", type=Path)
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--match", default="WITH shares AS", help="a statement is timed when its text holds this")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--preset", default="hybrid")
    parser.add_argument("--small-memory", action="store_true", help=f"search a memory of {SMALL_SIZE} facts")
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode == "capture":
        capture(args)
        return 0
    if args.pgdata is None or len(args.tree) != 2:
        parser.error("--pgdata and two --tree are required")
    if not (DATA / "queries.jsonl").exists():
        parser.error(f"the SciFact claims and corpus are read from {DATA}")
    sys.path[:0] = [str(REPO / "layers" / "core"), str(REPO / "bench")]
    from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
    from search_latency import percentile

    server = EmbeddedPostgres(args.pgdata.resolve())
    server.start()
    try:
        url = server.uri("postgres")
        seed(url, args.size)
        arms = []
        with tempfile.TemporaryDirectory(prefix="statement-ab-") as tmp:
            for n, tree in enumerate(args.tree):
                out = Path(tmp) / f"{n}.json"
                subprocess.run([sys.executable, __file__, "capture", "--tree", tree, "--url", url, "--out", str(out),
                                "--match", args.match, "--queries", str(args.queries), "--preset", args.preset,
                                *(["--small-memory"] if args.small_memory else [])],
                               check=True, env={**os.environ, "PYTHONPATH": ""})
                arms.append(json.loads(out.read_text()))
        if len({len(statements) for statements in arms}) != 1 or not arms[0]:
            raise SystemExit(f"the trees sent {[len(s) for s in arms]} statements holding {args.match!r}: nothing to pair")
        times, same = replay(url, arms, args.rounds)
    finally:
        server.stop()
    scope = f"a memory of {SMALL_SIZE} facts of" if args.small_memory else "over"
    print(f"{len(arms[0])} statements holding {args.match!r} ({args.queries} {args.preset} searches, {scope} {args.size:,}"
          f" facts + {args.size:,} chunks), each pair {args.rounds} times back to back on one connection:")
    for tree, ms in zip(args.tree, times, strict=True):
        print(f"  {tree}: mean {statistics.mean(ms):.3f} ms, p50 {statistics.median(ms):.3f}, p95 {percentile(ms, 95):.3f}")
    diff = [b - a for a, b in zip(*times, strict=True)]
    print(f"  B - A: mean {statistics.mean(diff):+.3f} ms, median {statistics.median(diff):+.3f};"
          f" the same rows in {same} of {len(diff)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
