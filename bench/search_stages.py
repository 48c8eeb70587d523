"""Where one search's time goes on LoCoMo-size memories, per stage and per statement, and the same
searches A/B between source trees.

    python bench/search_stages.py --pgdata /tmp/stages/pgdata [--tree before/ --tree .]
        [--presets vector_only,hybrid] [--queries 400] [--profile] [--explain]

The first run seeds ``--pgdata`` (kept for the next runs): the LoCoMo dev conversations as one memory
each, written through the funnel as bench/peers.py does (``locomo.seed``: 419-689 facts a memory),
then ``ANALYZE``. Vectors come from the evaluation's embedding cache (``$MEMORY_ENGINE_HOME/eval-cache``;
a miss runs the local model once). Each query is one LoCoMo question searched in its own conversation's
memory with its precomputed ``query_embedding`` and ``limit`` 10, timed as bench/peers.py times the
memory-engine rows: the ``SearchRequest`` built from the JSON-like body, ``search_knowledge`` with the
preset, the results dumped.

Each ``--tree`` (default: this one) answers in a process of its own that imports that tree's
``layers/core``; the trees and presets take turns every 20 queries in a rotating order (after a
warm-up), so a shared machine's drift weighs on every arm alike. Printed per arm: median and p95 of
the total and of each stage (``request``, ``search`` and inside it ``plan``, ``ranking`` (its
``fusion``, and since eab5211 its ``fetch``, the page's row read), ``page`` (before eab5211 its
``fetch``), ``dump``), of the time in SQL (statements sent and their rows
read), and the statements and transactions per search. ``--profile``: the top of cProfile over the
first arm's searches. ``--explain``: ``EXPLAIN (ANALYZE, BUFFERS)`` of each statement of one search
of each preset (the plan PostgreSQL makes for the values given; the search itself runs its own
prepared generic plan).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import pstats
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CHUNK = 20
#: A vector written into a plan (384 numbers), shortened when printed.
VECTOR_LITERAL = re.compile(r"'\[[-0-9.e,]+\]'")
PROJECT = "search-stages"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else 0.0


# --- worker: one tree, one process ---------------------------------------------------------------


class Probe:
    """Per-search stage timings and SQL accounting, gathered by wrapping the tree's functions."""

    def __init__(self) -> None:
        self.times: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.recording: list[tuple[str, Any]] | None = None

    def reset(self) -> None:
        self.times.clear()
        self.counts.clear()

    def wrap(self, owner: Any, name: str, stage: str) -> None:
        original = getattr(owner, name, None)
        if original is None:
            return
        probe = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                probe.times[stage] += time.perf_counter() - started

        setattr(owner, name, timed)

    def patch_psycopg(self) -> None:
        import psycopg

        probe = self
        execute, fetchall, fetchone, commit = (psycopg.Cursor.execute, psycopg.Cursor.fetchall, psycopg.Cursor.fetchone,
                                               psycopg.Connection.commit)

        def cursor_execute(cur: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
            text = query if isinstance(query, str) else str(query)
            kind = "check" if text == "" else "settings" if "set_config(" in text[:40] else "statement"
            probe.counts[kind] += 1
            if probe.recording is not None and kind == "statement":
                probe.recording.append((text, params))
            started = time.perf_counter()
            try:
                return execute(cur, query, params, **kwargs)
            finally:
                probe.times["sql"] += time.perf_counter() - started

        def timed_fetch(fetch: Callable[..., Any]) -> Callable[..., Any]:
            def run(cur: Any, *args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return fetch(cur, *args, **kwargs)
                finally:
                    probe.times["sql"] += time.perf_counter() - started
            return run

        def counted_commit(conn: Any) -> Any:
            probe.counts["transactions"] += 1
            started = time.perf_counter()
            try:
                return commit(conn)
            finally:
                probe.times["sql"] += time.perf_counter() - started

        psycopg.Cursor.execute = cursor_execute  # type: ignore[method-assign,assignment]
        psycopg.Cursor.fetchall = timed_fetch(fetchall)  # type: ignore[method-assign]
        psycopg.Cursor.fetchone = timed_fetch(fetchone)  # type: ignore[method-assign]
        psycopg.Connection.commit = counted_commit  # type: ignore[method-assign,assignment]


def database_of(server_url: str, tree: Path) -> tuple[str, bool]:
    """The URL of the database seeded with ``tree``'s schema (one per distinct set of migrations, on
    the one server, so two trees that differ in their schema are each timed on their own), and
    whether it was created now."""
    import psycopg

    migrations = sorted((tree / "layers" / "core" / "memory_engine" / "migrations").glob("*.sql"))
    digest = hashlib.sha1(b"".join(m.name.encode() + m.read_bytes() for m in migrations)).hexdigest()[:12]
    name = f"stages_{digest}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f"CREATE DATABASE {name}")
    return psycopg.conninfo.make_conninfo(server_url, dbname=name), not exists


def worker(args: argparse.Namespace) -> int:
    args.tree = args.tree[0]
    sys.path.insert(0, str(args.tree.resolve() / "layers" / "core"))
    import numpy as np
    import psycopg

    from memory_engine.adapters.postgres import search as pg_search
    from memory_engine.bootstrap import Container, set_container
    from memory_engine.domain.search_config import PRESETS
    from memory_engine.domain.search_models import SearchRequest
    from memory_engine.evaluation import locomo
    from memory_engine.evaluation.embedding_cache import DiskCachedEmbedder
    from memory_engine.services import search_knowledge as service
    from memory_engine.settings import Settings

    print(f"[{args.tree}] memory_engine from {sys.modules['memory_engine'].__file__}", file=sys.stderr)
    url, fresh = database_of(args.url, args.tree)
    settings = Settings()
    container = Container(settings.model_copy(update={"database_url": url}))
    container.__dict__["embedder"] = DiskCachedEmbedder(container.embedder, settings.home / "eval-cache")
    set_container(container)
    conversations = locomo.load(args.locomo, max_conversations=args.conversations)
    state = args.pgdata.parent / f"{args.pgdata.name}.{psycopg.conninfo.conninfo_to_dict(url)['dbname']}.json"
    if fresh or not state.exists():
        from memory_engine.adapters.postgres.migrations import migrate
        from memory_engine.evaluation.beir import analyze

        migrate(url, embedding_dim=container.embedder.dimensions)
        project_id = container.projects.get_or_create_project(PROJECT).id
        memories = {c.sample_id: locomo.seed(container, project_id, c)[0] for c in conversations}
        analyze(container)
        state.write_text(json.dumps({"project_id": project_id, "memories": memories}))
    seeded = json.loads(state.read_text())
    queries = [(seeded["memories"][c.sample_id], q.text) for c in conversations for q in c.questions]
    vectors = [np.asarray(container.embedder.embed_query(text)).tolist() for _, text in queries]

    probe = Probe()
    probe.patch_psycopg()
    index = container.knowledge_index
    for stage, owner, name in (("plan", service, "_plan"), ("ranking", type(index), "ranking"),
                               ("fusion", pg_search, "fused_ranking"), ("page", service, "_page"),
                               # the page's row read under each tree's name for it (a name a tree lacks is passed over)
                               ("fetch", type(index), "fetch"), ("fetch", pg_search, "_page_rows"),
                               ("fetch", pg_search, "page_rows"),
                               ("render", service, "render")):
        probe.wrap(owner, name, stage)
    profiler = cProfile.Profile() if args.profile else None

    def one(preset: str, i: int) -> dict[str, float]:
        memory_id, text = queries[i % len(queries)]
        body = {"query": text, "query_embedding": vectors[i % len(queries)], "limit": 10, "memory_ids": [memory_id]}
        probe.reset()
        started = time.perf_counter()
        request = SearchRequest(**body)
        built = time.perf_counter()
        response = service.search_knowledge(index, container.embedder, project_id=seeded["project_id"],
                                            request=request, config=PRESETS[preset])
        searched = time.perf_counter()
        [r.model_dump() for r in response.results]
        ended = time.perf_counter()
        out = {"total": ended - started, "request": built - started, "search": searched - built, "dump": ended - searched}
        out.update(probe.times)
        return {k: v * 1000 for k, v in out.items()} | {k: float(v) for k, v in probe.counts.items()}

    print(json.dumps({"ready": url}), flush=True)
    for line in sys.stdin:
        order = json.loads(line)
        if order["what"] == "explain":
            probe.recording = []
            one(order["preset"], order["start"])
            recorded, probe.recording = probe.recording, None
            print(json.dumps({"plans": explain(container, recorded)}), flush=True)
            continue
        if profiler is not None and order.get("profile"):
            profiler.enable()
        rows = [one(order["preset"], i) for i in range(order["start"], order["start"] + order["count"])]
        if profiler is not None:
            profiler.disable()
        print(json.dumps({"rows": rows}), flush=True)
    if profiler is not None:
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(30)
        print(text.getvalue(), file=sys.stderr)
    set_container(None)
    container.close()
    return 0


def explain(container: Any, recorded: list[tuple[str, Any]]) -> list[str]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of each recorded statement, in a search transaction's settings."""
    out = []
    for text, params in recorded:
        with container.search_database.connection() as conn:
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
                         " set_config('hnsw.ef_search', '40', true)")
            rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + text, params).fetchall()
            plan = "\n".join(str(next(iter(r.values()))) for r in rows)
            out.append(VECTOR_LITERAL.sub("'[...]'", text[:300] + "\n" + plan))
            conn.rollback()
    return out


# --- driver ------------------------------------------------------------------------------------


STAGES = ("total", "request", "search", "plan", "ranking", "fusion", "page", "fetch", "dump", "sql")
COUNTS = ("statement", "settings", "check", "transactions")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pgdata", type=Path, required=True)
    parser.add_argument("--tree", type=Path, action="append", help="a source tree (repeat to A/B; default: this one)")
    parser.add_argument("--presets", default="vector_only,hybrid")
    parser.add_argument("--queries", type=int, default=400, help="searches per arm (LoCoMo questions in turn)")
    parser.add_argument("--locomo", type=Path, default=DATA / "locomo" / "locomo_dev5.json")
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--json", type=Path, help="also write every arm's summary here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "core"))
    from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres

    trees = args.tree or [Path(__file__).resolve().parents[1]]
    presets = args.presets.split(",")
    server = EmbeddedPostgres(args.pgdata)
    server.start()
    url = server.uri("postgres")
    workers: list[subprocess.Popen[str]] = []
    try:
        for tree in trees:  # one after another: a worker seeding its database has the machine to itself
            command = [sys.executable, __file__, "--worker", "--tree", str(tree), "--pgdata", str(args.pgdata),
                       "--url", url, "--locomo", str(args.locomo), "--conversations", str(args.conversations)]
            command += ["--profile"] if args.profile and not workers else []
            workers.append(subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            print(f"{tree}: {read(workers[-1])['ready']}", file=sys.stderr)

        arms = [(t, p) for t in range(len(trees)) for p in presets]
        for t, p in arms:  # warm-up: imports, prepared statements, caches
            ask(workers[t], {"what": "time", "preset": p, "start": 0, "count": CHUNK})
        samples: dict[tuple[int, str], list[dict[str, float]]] = {arm: [] for arm in arms}
        for turn, start in enumerate(range(0, args.queries, CHUNK)):
            for t, p in arms[turn % len(arms):] + arms[:turn % len(arms)]:
                count = min(CHUNK, args.queries - start)
                samples[t, p] += ask(workers[t], {"what": "time", "preset": p, "start": start, "count": count,
                                                  "profile": t == 0})["rows"]
        if args.explain:
            for t, p in arms:
                for plan in ask(workers[t], {"what": "explain", "preset": p, "start": 7})["plans"]:
                    print(f"--- {trees[t]} {p}\n{plan}\n")
        summary = report(trees, arms, samples)
        if args.json:
            args.json.write_text(json.dumps(summary, indent=1))
    finally:
        for w in workers:
            if w.stdin:
                w.stdin.close()
            w.wait()
        server.stop()
    return 0


def ask(worker: subprocess.Popen[str], order: dict[str, Any]) -> Any:
    assert worker.stdin is not None
    worker.stdin.write(json.dumps(order) + "\n")
    worker.stdin.flush()
    return read(worker)


def read(worker: subprocess.Popen[str]) -> Any:
    assert worker.stdout is not None
    line = worker.stdout.readline()
    if not line:
        raise RuntimeError(f"worker ended (exit {worker.wait()})")
    return json.loads(line)


def report(trees: list[Path], arms: list[tuple[int, str]], samples: dict[tuple[int, str], list[dict[str, float]]]
           ) -> list[dict[str, Any]]:
    summary = []
    print(f"{'arm':<40} " + " ".join(f"{s:>15}" for s in STAGES) + "   per search: " + ", ".join(COUNTS))
    print(f"{'':<40} " + " ".join(f"{'p50 / p95 ms':>15}" for _ in STAGES))
    for t, p in arms:
        rows = samples[t, p]
        cells, entry = [], {"tree": str(trees[t]), "preset": p, "searches": len(rows)}
        for stage in STAGES:
            values = [r.get(stage, 0.0) for r in rows]
            p50, p95 = statistics.median(values), percentile(values, 95)
            entry[stage] = {"p50_ms": round(p50, 3), "p95_ms": round(p95, 3)}
            cells.append(f"{p50:6.2f} / {p95:6.2f}")
        counts = {c: statistics.mean(r.get(c, 0.0) for r in rows) for c in COUNTS}
        entry["per_search"] = counts
        summary.append(entry)
        name = f"{trees[t].name or trees[t]}:{p}"
        print(f"{name:<40} " + " ".join(f"{c:>15}" for c in cells) + "   " + ", ".join(f"{counts[c]:.2f}" for c in COUNTS))
    return summary


if __name__ == "__main__":
    sys.exit(main())
