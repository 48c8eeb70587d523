"""What recording a conversation's turns costs the database (the model excluded), and the model.

    .venv/bin/python bench/record_turns.py [--batches 200] [--size 20] [--model]

Starts a throwaway embedded PostgreSQL, then stores ``--batches`` batches of ``--size`` one-message
turns of one conversation through ``PostgresEpisodeRepository.store_turns``, each batch after the
ones before, ids made in order as the turns endpoint makes them, no vectors (so the embedding model,
the larger cost of a recorded batch, is not what is timed); then, as ``services.turns.record_turns``
does, reads which turns fit with the turn before them and stores their windows over it (migration
0014; fixed vectors). Prints the median and p95 per batch of each. With ``--model``, also times the
local model embedding a batch's own windows and its windows over the turns before (median of 20).
Run it with another tree's ``layers/core`` on ``PYTHONPATH`` to compare (docs/retrieval.md, "Episodes").
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.episodes import PostgresEpisodeRepository
from memory_engine.adapters.postgres.migrations import migrate
from memory_engine.ids import EPISODE, new_id
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
from memory_engine.ports.episodes import NewEpisode

START = datetime(2024, 1, 1, tzinfo=UTC)


def batch(index: int, size: int) -> list[NewEpisode]:
    """The ``index``-th batch: ``size`` turns said one second apart after the batches before it."""
    row_ids = sorted(new_id(EPISODE) for _ in range(size))
    return [
        NewEpisode(project_id="p", memory_id="m", conversation_id="c", turn_id=f"t{index}-{j}", event_id=f"e{index}-{j}",
                   occurred_at=START + timedelta(seconds=index * size + j), id=row_ids[j],
                   transcript=f"user: turn {index}.{j}, about the garden, the plumber and the boiler " * 3,
                   messages=[{"role": "user", "content": f"turn {index}.{j}"}])
        for j in range(size)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--size", type=int, default=20)
    parser.add_argument("--model", action="store_true", help="also time the local model embedding a batch")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="record-turns-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pgdata")
        server.start()
        try:
            url = server.uri("postgres")
            migrate(url, embedding_dim=384)
            database = Database(url)
            with database.connection() as conn:
                conn.execute("INSERT INTO projects (id, name) VALUES ('p', 'bench')")
                conn.execute("INSERT INTO memories (id, project_id, name) VALUES ('m', 'p', 'bench')")
            repo = PostgresEpisodeRepository(database)
            times: list[float] = []
            reads: list[float] = []
            vector = np.full(384, 384 ** -0.5, dtype=np.float32)
            for index in range(args.batches):
                turns = batch(index, args.size)
                started = time.perf_counter()
                repo.store_turns(turns, [[] for _ in turns])
                times.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                pending = repo.turns_to_read("p", [turn.id or "" for turn in turns])
                repo.store_read_windows("p", [(turn, vector) for turn in pending])
                reads.append((time.perf_counter() - started) * 1000)
            database.close()
        finally:
            server.stop()
    print(f"{args.batches} batches of {args.size} turns:")
    _report("store_turns, no vectors", times)
    _report("windows over the turns before them (read + store, fixed vectors)", reads)
    if args.model:
        _model(args.size)


def _report(what: str, times: list[float]) -> None:
    times = sorted(times)
    print(f"  {what}: median {statistics.median(times):.2f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.2f} ms per batch")


def _model(size: int) -> None:
    from memory_engine.domain.turns import read_after
    from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

    model = OnnxMiniLMEmbedder()
    turns = [turn.transcript for turn in batch(0, size)]
    pairs = [text for before, own in itertools.pairwise(turns) if (text := read_after(before, own))]
    model.embed_documents(turns)  # warm up
    for what, texts in (("own windows", turns), ("windows over the turns before", pairs)):
        times = []
        for _ in range(20):
            started = time.perf_counter()
            model.embed_documents(texts)
            times.append((time.perf_counter() - started) * 1000)
        _report(f"the local model, {len(texts)} {what}", times)


if __name__ == "__main__":
    main()
