"""Write-funnel latency excluding the embedding call, at 10k and 100k live entries in one memory.

Usage (from the repository root; ~5 min on 2 cores, most of it seeding and building the HNSW index)::

    .venv/bin/python bench/write_funnel.py                       # embedded PostgreSQL in a temp dir
    DATABASE_URL=postgresql://... .venv/bin/python bench/write_funnel.py --sizes 10000,100000
    .venv/bin/python bench/write_funnel.py --batch               # batch vs per-request loop over HTTP (~1 min)

``--batch``: the local engine (the one `memory-engine dev` runs: HTTP gateway on 127.0.0.1, the
local embedding model) writes ``--facts`` short facts (default 100) into a fresh memory twice per
round: one ``POST /v1/memory-entries`` per fact over a kept-alive connection, then one
``POST /v1/memory-entries/batch`` with all of them; prints facts/s of each (median of
``--rounds``) and the ratio. Both include the embedding model; every fact is ``created``.

For each size, a fresh database gets one memory with N live entries (random unit vectors, COPY
binary), the partial HNSW index is built, and then ``write_entry`` runs ``--writes`` times for new
facts (``created``) and again for the same facts (``skipped``: exact repeats, which the funnel finds
through the live-content index even where the approximate HNSW scan misses them, as it does for
random vectors at 100k). The embedder is a fake that
returns precomputed vectors, so the timings are the funnel itself: lock + shortlist (HNSW,
iterative scan) + insert + commit. Prints p50/p95 per size and action, the plan of the shortlist
query, and the p50 ratio between the largest and the smallest size.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.entries import PostgresEntryRepository
from memory_engine.adapters.postgres.memories import PostgresMemoryRepository
from memory_engine.adapters.postgres.migrations import migrate
from memory_engine.adapters.postgres.projects import PostgresProjectRepository
from memory_engine.domain.entries import NewEntry
from memory_engine.ports.chat import NoChatModel
from memory_engine.ports.embedder import Embedder, EmbeddingKind
from memory_engine.services.write_entry import write_entry

DIM = 384


class PrecomputedEmbedder(Embedder):
    """Returns the vector registered for each text: the model call is excluded from the timing."""

    dimensions = DIM
    model_id = "precomputed"

    def __init__(self) -> None:
        super().__init__()
        self.vectors: dict[str, np.ndarray] = {}

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        return [self.vectors[t] for t in texts]


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


@contextlib.contextmanager
def server_uri() -> Iterator[tuple[str, Callable[[str], str]]]:
    """(admin uri, uri-for-database) from DATABASE_URL or a temporary embedded server."""
    url = os.environ.get("DATABASE_URL")
    if url:
        from psycopg.conninfo import make_conninfo

        yield url, lambda db: make_conninfo(url, dbname=db)
        return
    from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix="bench-pg-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pgdata")
        uri = server.start()
        try:
            yield uri, server.uri
        finally:
            server.stop()


def seed(uri: str, project_id: str, memory_id: str, n: int, rng: np.random.Generator) -> None:
    """N live entries via COPY BINARY, then (re)build the partial HNSW index and ANALYZE."""
    with psycopg.connect(uri, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("DROP INDEX IF EXISTS memory_entries_embedding_live_idx")
        with conn.cursor() as cur, cur.copy(
            "COPY memory_entries (id, project_id, memory_id, content, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "text", "text", "text", "vector"])
            done = 0
            while done < n:
                batch = unit_vectors(rng, min(10_000, n - done))
                for vec in batch:
                    copy.write_row((ids.new_id(ids.ENTRY), project_id, memory_id, f"seeded fact {done}", vec))
                    done += 1
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        conn.execute(
            "CREATE INDEX memory_entries_embedding_live_idx ON memory_entries"
            " USING hnsw (embedding vector_cosine_ops) WHERE invalidated_at IS NULL"
        )
        conn.execute("ANALYZE memory_entries")


def explain(uri: str, memory_id: str, project_id: str, vector: np.ndarray) -> str:
    with psycopg.connect(uri) as conn:
        register_vector(conn)
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        conn.execute("SET LOCAL hnsw.ef_search = 40")
        rows = conn.execute(
            "EXPLAIN SELECT id FROM memory_entries e WHERE e.memory_id = %(m)s AND e.project_id = %(p)s"
            " AND e.invalidated_at IS NULL ORDER BY e.embedding <=> %(v)s LIMIT 5",
            {"m": memory_id, "p": project_id, "v": vector},
        ).fetchall()
    return "\n".join("    " + re.sub(r"'\[[^']*\]'::vector", "$vector", r[0]) for r in rows)


def commit_floor(uri: str, samples: int = 50) -> float:
    """p50 of a one-row INSERT + COMMIT into an unindexed table: the disk-flush floor of any write."""
    with psycopg.connect(uri) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor_probe (x int)")  # logged: a TEMP table skips the WAL
        conn.commit()
        timings = []
        for i in range(samples):
            start = time.perf_counter()
            conn.execute("INSERT INTO bench_floor_probe VALUES (%s)", (i,))
            conn.commit()
            timings.append((time.perf_counter() - start) * 1000)
        conn.execute("DROP TABLE bench_floor_probe")
        conn.commit()
    return float(np.median(timings))


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(samples, q))


def run_size(
    admin_uri: str, uri_for: Callable[[str], str], n: int, writes: int, warmup: int, seed_value: int
) -> dict[str, list[float]]:
    name = f"bench_{n}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    uri = uri_for(name)
    try:
        migrate(uri, embedding_dim=DIM)
        database = Database(uri, max_size=2)
        project = PostgresProjectRepository(database).get_or_create_project("bench")
        memory = PostgresMemoryRepository(database).create(project.id, name="bench")
        rng = np.random.default_rng(seed_value)
        t0 = time.perf_counter()
        seed(uri, project.id, memory.id, n, rng)
        print(f"  seeded {n:,} entries + HNSW index in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        database.reset()  # reconnect after the index was rebuilt

        repo = PostgresEntryRepository(database)
        embedder = PrecomputedEmbedder()
        chat = NoChatModel()
        texts = [f"new fact {i} for the {n} bench" for i in range(warmup + writes)]
        for text, vec in zip(texts, unit_vectors(rng, len(texts)), strict=True):
            embedder.vectors[text] = vec
        print("  shortlist plan:\n" + explain(uri, memory.id, project.id, embedder.vectors[texts[0]]), file=sys.stderr)

        timings: dict[str, list[float]] = {"created": [], "skipped": []}
        for phase in ("created", "skipped"):
            for i, text in enumerate(texts):
                entry = NewEntry(memory_id=memory.id, content=text)
                start = time.perf_counter()
                result = write_entry(repo, embedder, chat, project_id=project.id, entry=entry)
                elapsed = (time.perf_counter() - start) * 1000
                if result.action != phase:
                    raise SystemExit(f"expected {phase}, got {result.action}")
                if i >= warmup:
                    timings[phase].append(elapsed)
        timings["commit floor"] = [commit_floor(uri)]
        database.close()
        return timings
    finally:
        with psycopg.connect(admin_uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def short_facts(n: int, tag: str) -> list[str]:
    people = ["Alice", "Bob", "Carol", "Dan", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy"]
    things = ["tea", "chess", "Lisbon", "jazz", "cycling", "sushi", "Python", "gardening", "opera", "hiking"]
    return [f"{people[i % 10]} {['likes', 'visited', 'studies', 'avoids', 'talks about'][i // 10 % 5]} "
            f"{things[(i * 3 + i // 10) % 10]} ({tag} #{i})." for i in range(n)]


def run_batch(facts: int, rounds: int) -> int:
    """Per-request loop vs one batch over the local engine's HTTP API (see the module docstring)."""
    import http.client
    import json
    from urllib.parse import urlparse

    from memory_engine.domain.auth import parse_scopes
    from memory_engine.local.engine import LocalEngine
    from memory_engine.services.keys import create_api_key
    from memory_engine.settings import Settings

    with server_uri() as (admin_uri, uri_for), tempfile.TemporaryDirectory(prefix="bench-home-") as home:
        name = f"bench_batch_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(admin_uri, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        engine = LocalEngine(Settings(DATABASE_URL=uri_for(name), MEMORY_ENGINE_HOME=home),  # type: ignore[call-arg]
                             host="127.0.0.1", port=0)
        base = urlparse(engine.start())
        try:
            assert engine.container is not None
            key = create_api_key(engine.container.projects, project_name="bench", scopes=parse_scopes("read,write")).raw_key
            conn_http = http.client.HTTPConnection(base.hostname, base.port, timeout=120)
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

            def post(path: str, body: object) -> tuple[int, dict[str, object]]:
                conn_http.request("POST", path, body=json.dumps(body), headers=headers)
                response = conn_http.getresponse()
                return response.status, json.loads(response.read())

            post("/v1/knowledge/search", {"query": "warm up"})  # loads the model before timing
            loop_rates, batch_rates = [], []
            for r in range(rounds):
                memory = post("/v1/memories", {"name": f"loop-{r}"})[1]["id"]
                texts = short_facts(facts, f"loop {r}")
                start = time.perf_counter()
                for text in texts:
                    status, body = post("/v1/memory-entries", {"memory_id": memory, "content": text})
                    if status != 201:
                        raise SystemExit(f"loop write answered {status}: {body}")
                loop_rates.append(facts / (time.perf_counter() - start))

                memory = post("/v1/memories", {"name": f"batch-{r}"})[1]["id"]
                texts = short_facts(facts, f"batch {r}")
                start = time.perf_counter()
                status, body = post("/v1/memory-entries/batch",
                                    {"entries": [{"memory_id": memory, "content": t} for t in texts]})
                batch_rates.append(facts / (time.perf_counter() - start))
                if status != 200 or body["created"] != facts:
                    raise SystemExit(f"batch answered {status}: created {body.get('created')}")
                print(f"  round {r + 1}: loop {loop_rates[-1]:.0f} facts/s, batch {batch_rates[-1]:.0f} facts/s",
                      file=sys.stderr)
        finally:
            engine.stop()
            with psycopg.connect(admin_uri, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    loop, batch = statistics.median(loop_rates), statistics.median(batch_rates)
    print(f"\n{facts} short facts over HTTP, local model, median of {rounds} rounds")
    print(f"per-request loop (POST /v1/memory-entries x {facts}): {loop:7.1f} facts/s")
    print(f"one batch (POST /v1/memory-entries/batch):            {batch:7.1f} facts/s")
    print(f"batch / loop: {batch / loop:.1f}x")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", action="store_true", help="batch vs per-request loop over HTTP (local model)")
    parser.add_argument("--facts", type=int, default=100, help="--batch: facts per write (default 100)")
    parser.add_argument("--rounds", type=int, default=3, help="--batch: rounds (default 3)")
    parser.add_argument("--sizes", default="10000,100000", help="live entries in the memory (comma-separated)")
    parser.add_argument("--writes", type=int, default=300, help="timed writes per size and action")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.batch:
        return run_batch(args.facts, args.rounds)
    sizes = [int(s) for s in args.sizes.split(",")]

    results: dict[int, dict[str, list[float]]] = {}
    with server_uri() as (admin_uri, uri_for):
        for n in sizes:
            print(f"size {n:,}:", file=sys.stderr)
            results[n] = run_size(admin_uri, uri_for, n, args.writes, args.warmup, args.seed)

    print(f"\nwrite_entry latency excluding the embedding call ({args.writes} timed writes per row, ms)")
    print(f"{'live entries':>12} | {'action':<8} | {'p50':>6} | {'p95':>6} | {'mean':>6}")
    print("-" * 50)
    for n in sizes:
        for action, samples in results[n].items():
            if action == "commit floor":
                continue
            p50, p95, mean = pct(samples, 50), pct(samples, 95), statistics.fmean(samples)
            print(f"{n:>12,} | {action:<8} | {p50:6.2f} | {p95:6.2f} | {mean:6.2f}")
    floors = ", ".join(f"{results[n]['commit floor'][0]:.2f}" for n in sizes)
    print(f"disk-flush floor (1-row INSERT + COMMIT, no index), p50 ms per size: {floors}")
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        for action in ("created", "skipped"):
            ratio = pct(results[large][action], 50) / pct(results[small][action], 50)
            print(f"p50 ratio {large:,} / {small:,} ({action}): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
