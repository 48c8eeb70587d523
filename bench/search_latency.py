"""Server-side search latency (embedding call excluded) at 10k and 100k facts (+ chunks).

    .venv/bin/python bench/search_latency.py [--corpus ../shared/data/scifact/corpus.jsonl]
        [--sizes 10000,100000,1000000] [--queries 200] [--limit 10] [--connections 2,8] [--sequential] [--json] [--cpu]
        [--dated] [--also newer_first=false]

Seeds a throwaway embedded PostgreSQL with real sentences (SciFact abstracts) and random unit
vectors, then times `search_knowledge` in-process with `query` + `query_embedding` (so the
model never runs) for the `vector_only` and `hybrid` presets over one memory + all documents,
the presets taking turns every 20 queries.
Prints p50/p95 per size, the hybrid/vector ratio and the growth from the first to the last size,
and the peak memory of the run (this process, and PostgreSQL's proportional set size summed over
its processes, sampled after each size). ``--json`` prints one JSON object per size and preset
(``size``, ``preset``, ``p50_ms``, ``p95_ms``) on stdout and the table on stderr.

``--limit``: the page's size (10 by default). ``--also newer_first=false``: each preset is also timed
with those config overrides, as one more arm taking turns with the others (an A/B of a knob in one
process, on one database).

``--dated``: after the last size, the facts get dates spread over 2022-2024 and the hybrid preset
is timed again with each query naming a date in one of the forms the date list reads (a day, a
month, a year, a month or a day without a year), next to the same queries naming none.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "layers" / "core"))

from memory_engine.adapters.postgres.database import Database  # noqa: E402
from memory_engine.adapters.postgres.migrations import migrate  # noqa: E402
from memory_engine.adapters.postgres.search import PostgresKnowledgeIndex  # noqa: E402
from memory_engine.domain.search_config import PRESETS, SearchConfig  # noqa: E402
from memory_engine.domain.search_models import SearchRequest  # noqa: E402
from memory_engine.evaluation import synthetic  # noqa: E402
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres  # noqa: E402
from memory_engine.ports.embedder import Embedder  # noqa: E402
from memory_engine.services.search_knowledge import search_knowledge  # noqa: E402
from memory_engine.settings import Settings  # noqa: E402

DIM = 384


class NoModel(Embedder):
    """The benchmark always passes `query_embedding`; any model call is a bug."""

    dimensions = DIM
    model_id = "none"

    def _embed_batch(self, texts, kind):  # type: ignore[no-untyped-def]
        raise AssertionError("the benchmark must not embed")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def load_queries(path: Path, n: int) -> list[str]:
    """``n`` query texts: the claims of ``path`` (SciFact's queries.jsonl) over and over, else
    ``synthetic.FALLBACK``'s."""
    texts = [json.loads(line)["text"] for line in path.open()] if path.exists() else synthetic.FALLBACK
    return (texts * (n // max(1, len(texts)) + 1))[:n]


def time_preset(index: PostgresKnowledgeIndex, project_id: str, memory_id: str, queries: list[str], preset: str,
                first: int = 0, limit: int = 10) -> list[float]:
    """Latencies (ms) of ``queries``, the ``first``-th query of the run first: each query has a
    vector of its own, seeded by its place in the run (so a query's text and vector stay paired in
    every arm, and no two queries share a vector)."""
    embedder = NoModel()
    out = []
    for i, text in enumerate(queries, start=first):
        vector = synthetic.random_query_vector(1000 + i, DIM).tolist()
        request = SearchRequest(query=text, query_embedding=vector, memory_ids=[memory_id], limit=limit)
        started = time.perf_counter()
        search_knowledge(index, embedder, project_id=project_id, request=request, config=config_of(preset))
        out.append((time.perf_counter() - started) * 1000)
    return out


def config_of(arm: str) -> SearchConfig:
    """The config an arm names: a preset, or a preset and overrides (``"hybrid newer_first=false"``:
    the ``--also`` arms; values read as JSON, else as text)."""
    preset, _, overrides = arm.partition(" ")
    update: dict[str, object] = {}
    for pair in filter(None, overrides.split(",")):
        key, _, value = pair.partition("=")
        try:
            update[key] = json.loads(value)
        except ValueError:
            update[key] = value
    return PRESETS[preset].model_copy(update=update) if update else PRESETS[preset]


#: The presets timed, and how many queries each runs before the next takes its turn.
PRESETS_TIMED = ("vector_only", "hybrid")
CHUNK = 20
#: The one memory the benchmark seeds and searches.
MEMORY_ID = "mem_bench"

Arm = tuple[str, int]  # (preset, search connections)
A = TypeVar("A")


def take_turns(arms: list[A], queries: list[str], run: Callable[[A, list[str], int], list[float]]) -> dict[A, list[float]]:
    """Latencies (ms) of each arm over ``queries``, the arms taking turns every :data:`CHUNK` queries
    in a rotating order (after :data:`CHUNK` warm-up queries each), so a shared machine's drift over
    the run weighs on them alike and a ratio of two arms compares like with like. ``run(arm, chunk,
    first)`` is told where its chunk starts in ``queries``."""
    for arm in arms:
        run(arm, queries[:CHUNK], 0)  # warm caches
    samples: dict[A, list[float]] = {arm: [] for arm in arms}
    for turn, start in enumerate(range(0, len(queries), CHUNK)):
        for arm in arms[turn % len(arms):] + arms[:turn % len(arms)]:
            samples[arm] += run(arm, queries[start:start + CHUNK], start)
    return samples


def interleaved(indexes: dict[int, PostgresKnowledgeIndex], project_id: str, memory_id: str, queries: list[str],
                presets: tuple[str, ...], limit: int = 10) -> dict[Arm, list[float]]:
    """:func:`take_turns` over each preset on each index (by its pool's connections)."""
    arms: list[Arm] = [(preset, connections) for connections in indexes for preset in presets]
    return take_turns(arms, queries, lambda arm, chunk, first: time_preset(
        indexes[arm[1]], project_id, memory_id, chunk, arm[0], first, limit))


def _postgres_processes(data_dir: Path) -> Iterator[tuple[Path, list[str]]]:
    """``(/proc/<pid>, stat fields after the command name)`` of the postmaster of ``data_dir`` and
    its children (backends, checkpointer, ...)."""
    pid_file = data_dir / "postmaster.pid"
    if not pid_file.exists():
        return
    postmaster = int(pid_file.read_text().split()[0])
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if int(proc.name) == postmaster or int(stat[1]) == postmaster:
                yield proc, stat
        except (OSError, IndexError, ValueError):
            continue


def postgres_pss_mb(data_dir: Path) -> float:
    """PostgreSQL's memory now: the proportional set size (shared buffers counted once) of every
    process of its postmaster."""
    total_kb = 0
    for proc, _ in _postgres_processes(data_dir):
        try:
            for line in (proc / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
    return total_kb / 1024


def postgres_cpu_s(data_dir: Path) -> float:
    """CPU seconds (user + system) the server's processes have used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(stat[11]) + int(stat[12]) for _, stat in _postgres_processes(data_dir)) / ticks


def cpu_per_search(database: Database, data_dir: Path, project_id: str, memory_id: str, queries: list[str]) -> dict[str, float]:
    """Where one hybrid search's time goes, its statements run one after another on one connection
    (so nothing overlaps): wall time, this process's CPU and the server's CPU, ms per search."""
    index = PostgresKnowledgeIndex(database, parallel=False)
    time_preset(index, project_id, memory_id, queries[:20], "hybrid")
    server, client, wall = postgres_cpu_s(data_dir), time.process_time(), time.perf_counter()
    time_preset(index, project_id, memory_id, queries, "hybrid")
    n = len(queries) / 1000
    return {"wall_ms": (time.perf_counter() - wall) / n, "client_cpu_ms": (time.process_time() - client) / n,
            "server_cpu_ms": (postgres_cpu_s(data_dir) - server) / n}


#: ``--dated``: (name, suffix) of the query forms that name a date.
DATED_FORMS = (("no date", ""), ("a day", " on 8 May, 2023"), ("a month", " in May 2023"), ("a year", " in 2023"),
               ("a month, no year", " in June"), ("a day, no year", " on 9 June"))


def time_dated(index: PostgresKnowledgeIndex, database: Database, project_id: str, memory_id: str,
               queries: list[str]) -> dict[str, list[float]]:
    """Hybrid latencies per :data:`DATED_FORMS` form (:func:`take_turns`), after dating every fact
    (one day of 2022-2024 by a hash of its id, 13:00 UTC)."""
    with database.connection() as conn:
        conn.execute("UPDATE memory_entries SET valid_from = timestamptz '2022-01-01 13:00+00'"
                     " + (abs(hashtext(id)) % 1095) * interval '1 day'")
        conn.execute("ANALYZE memory_entries")
    suffixes = dict(DATED_FORMS)
    return take_turns(list(suffixes), queries, lambda name, chunk, first: time_preset(
        index, project_id, memory_id, [q + suffixes[name] for q in chunk], "hybrid", first))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl")
    parser.add_argument("--queries-file", type=Path, default=REPO.parent / "shared" / "data" / "scifact" / "queries.jsonl")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=10, help="results a search asks for (a page's size)")
    parser.add_argument("--also", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                        help="also time each preset with these config overrides, taking turns with the others"
                             " (e.g. newer_first=false)")
    parser.add_argument("--sequential", action="store_true", help="run the signals one after another on one connection")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--connections", default=None,
                        help="search's pool sizes to compare, e.g. 2,8 (interleaved; default: the server's,"
                             " MEMORY_ENGINE_SEARCH_CONNECTIONS or the cores)")
    parser.add_argument("--dated", action="store_true",
                        help="after the last size, date the facts and time hybrid queries that name a date")
    parser.add_argument("--cpu", action="store_true",
                        help="also account one hybrid search's CPU per size (client, server; statements one after another)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    pools = [int(c) for c in args.connections.split(",")] if args.connections else [Settings().resolved_search_connections]
    texts = synthetic.sentences(args.corpus)
    queries = load_queries(args.queries_file, args.queries)
    report: dict[str, dict[str, float]] = {}
    peak_pg_mb = 0.0
    out = sys.stderr if args.json else sys.stdout
    with tempfile.TemporaryDirectory(prefix="search-bench-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pgdata")
        server.start()
        url = server.uri("postgres")
        try:
            migrate(url, embedding_dim=DIM)
            database = Database(url)
            # search's own pool, as the server builds it (bootstrap.search_database)
            search_databases = {c: Database(url, max_size=c) for c in pools}
            indexes = {c: PostgresKnowledgeIndex(db, parallel=not args.sequential) for c, db in search_databases.items()}
            with database.connection() as conn:
                project_id = "proj_bench"
                conn.execute("INSERT INTO projects (id, name) VALUES (%s, 'bench')", (project_id,))
                conn.execute("INSERT INTO memories (id, project_id, name) VALUES (%s, %s, 'bench')", (MEMORY_ID, project_id))
            loaded = 0
            for size in sizes:
                started = time.perf_counter()
                with synthetic.VectorIndexesDeferred(database):
                    synthetic.load_facts(database, project_id, MEMORY_ID, texts, size - loaded, dim=DIM)
                    synthetic.load_chunks(database, project_id, texts, size - loaded, dim=DIM, seed=size)
                synthetic.settle(url)
                warmed = synthetic.warm_vector_indexes(url, DIM)
                loaded = size
                with database.connection() as conn:
                    row = conn.execute("SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) AS b FROM pg_index i"
                                       " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
                                       " WHERE a.amname = 'hnsw'").fetchone()
                hnsw_mb = int(row["b"]) / 2**20 if row else 0.0
                print(f"seeded {size} facts + {size} chunks in {time.perf_counter() - started:.0f} s"
                      f" (HNSW indexes {hnsw_mb:.0f} MB, one walk over them {warmed:.0f} s)", file=sys.stderr)
                arms = PRESETS_TIMED + tuple(f"{preset} {also}" for also in args.also for preset in PRESETS_TIMED)
                samples_of = interleaved(indexes, project_id, MEMORY_ID, queries, arms, args.limit)
                for (preset, connections), samples in samples_of.items():
                    report[f"{size}:{preset}:{connections}"] = {
                        "p50": statistics.median(samples), "p95": percentile(samples, 95), "n": len(samples),
                    }
                    if args.json:
                        print(json.dumps({"size": size, "preset": preset, "connections": connections,
                                          "p50_ms": round(statistics.median(samples), 2),
                                          "p95_ms": round(percentile(samples, 95), 2)}), flush=True)
                if args.cpu:
                    cpu = cpu_per_search(database, Path(tmp) / "pgdata", project_id, MEMORY_ID, queries)
                    print(f"{size:,}: one hybrid search, statements one after another: {cpu['wall_ms']:.1f} ms wall,"
                          f" {cpu['client_cpu_ms']:.1f} ms CPU here, {cpu['server_cpu_ms']:.1f} ms CPU in PostgreSQL",
                          file=sys.stderr)
                    if args.json:
                        print(json.dumps({"size": size, "preset": "hybrid", "cpu": {k: round(v, 2) for k, v in cpu.items()}}),
                              flush=True)
                peak_pg_mb = max(peak_pg_mb, postgres_pss_mb(Path(tmp) / "pgdata"))
            dated = time_dated(indexes[pools[0]], database, project_id, MEMORY_ID, queries) if args.dated else {}
            for name, samples in dated.items():
                if args.json:
                    print(json.dumps({"size": sizes[-1], "preset": "hybrid", "connections": pools[0], "query_names": name,
                                      "p50_ms": round(statistics.median(samples), 2),
                                      "p95_ms": round(percentile(samples, 95), 2)}), flush=True)
            for index in indexes.values():
                index.close()
            for search_database in search_databases.values():
                search_database.close()
            database.close()
        finally:
            server.stop()
    mode = "sequential (one connection)" if args.sequential else "parallel (thread per signal)"
    print(f"search latency, server side, embedding excluded; signals {mode}; {args.queries} queries each,"
          f" limit {args.limit};"
          " presets (and pools) taking turns every 20 queries\n", file=out)
    print("| facts + chunks | preset | search connections | p50 ms | p95 ms |\n|---|---|---|---|---|", file=out)
    for key, row in report.items():
        size, preset, connections = key.split(":")
        print(f"| {int(size):,} + {int(size):,} | {preset} | {connections} | {row['p50']:.1f} | {row['p95']:.1f} |",
              file=out)
    first, last = sizes[0], sizes[-1]
    for connections in pools:
        for size in sizes:
            ratio = report[f"{size}:hybrid:{connections}"]["p95"] / report[f"{size}:vector_only:{connections}"]["p95"]
            print(f"\nhybrid/vector p95 ratio at {size:,}, {connections} connections: {ratio:.2f}", file=out)
        if len(sizes) > 1:
            growth = report[f"{last}:hybrid:{connections}"]["p95"] / report[f"{first}:hybrid:{connections}"]["p95"]
            print(f"hybrid p95 growth {first:,} -> {last:,}, {connections} connections: {growth:.2f}x", file=out)
    if dated:
        print(f"\nhybrid at {sizes[-1]:,} with dated facts, {pools[0]} connections: queries naming ...\n", file=out)
        print("| the query names | p50 ms | p95 ms |\n|---|---|---|", file=out)
        for name, samples in dated.items():
            print(f"| {name} | {statistics.median(samples):.1f} | {percentile(samples, 95):.1f} |", file=out)
    peak_self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: benchmark process {peak_self_mb:.0f} MB RSS; PostgreSQL {peak_pg_mb:.0f} MB PSS"
          " (all its processes, sampled after each size)", file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
