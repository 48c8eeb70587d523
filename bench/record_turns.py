"""What recording a conversation's turns costs the database (the model excluded).

    .venv/bin/python bench/record_turns.py [--batches 200] [--size 20]

Starts a throwaway embedded PostgreSQL, then stores ``--batches`` batches of ``--size`` one-message
turns of one conversation through ``PostgresEpisodeRepository.store_turns``, each batch after the
ones before, ids made in order as the turns endpoint makes them, no vectors (so the embedding model,
the larger cost of a recorded batch, is not what is timed). Prints the median and p95 per batch.
Run it with another tree's ``layers/core`` on ``PYTHONPATH`` to compare (docs/retrieval.md, "Episodes").
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
            times = []
            for index in range(args.batches):
                turns = batch(index, args.size)
                started = time.perf_counter()
                repo.store_turns(turns, [[] for _ in turns])
                times.append((time.perf_counter() - started) * 1000)
            database.close()
        finally:
            server.stop()
    times.sort()
    print(f"store_turns, {args.batches} batches of {args.size} turns, no vectors: median {statistics.median(times):.2f} ms,"
          f" p95 {times[int(0.95 * (len(times) - 1))]:.2f} ms per batch")


if __name__ == "__main__":
    main()
