"""What the keyword statement's lexeme counting costs a hybrid search: the table's planner statistics
read (what a scope they describe does) against every lexeme counted in the scope's own rows (what a
scope they cannot describe does: bm25.counts_locally), taking turns.

    .venv/bin/python bench/keyword_counts.py [--size 100000] [--queries 200]

Seeds a throwaway embedded PostgreSQL as bench/search_latency.py does (one memory of ``--size``
facts and as many document chunks, SciFact sentences, random vectors, ``VACUUM (ANALYZE)``), prints
each table's ``reltuples`` next to its row count and the statistics' ``describes`` (the largest
scope they still describe), then times hybrid searches with ``counts_locally`` forced each way
(bench/search_latency.take_turns). Before e4a067d a scope holding the whole table was counted
locally whenever ``reltuples`` came out under the row count, about one seeding in two.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import search_latency as bench
from memory_engine.adapters.postgres import bm25
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.migrations import migrate
from memory_engine.adapters.postgres.search import PostgresKnowledgeIndex
from memory_engine.evaluation import synthetic
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres

PROJECT = "proj_bench"


def seed(url: str, size: int, texts: list[str]) -> Database:
    migrate(url, embedding_dim=bench.DIM)
    database = Database(url)
    with database.connection() as conn:
        conn.execute("INSERT INTO projects (id, name) VALUES (%s, 'bench')", (PROJECT,))
        conn.execute("INSERT INTO memories (id, project_id, name) VALUES (%s, %s, 'bench')", (bench.MEMORY_ID, PROJECT))
    with synthetic.VectorIndexesDeferred(database):
        synthetic.load_facts(database, PROJECT, bench.MEMORY_ID, texts, size, dim=bench.DIM)
        synthetic.load_chunks(database, PROJECT, texts, size, dim=bench.DIM, seed=size)
    synthetic.settle(url)
    synthetic.warm_vector_indexes(url, bench.DIM)
    return database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=bench.REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl")
    parser.add_argument("--queries-file", type=Path, default=bench.REPO.parent / "shared" / "data" / "scifact" / "queries.jsonl")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    texts = synthetic.sentences(args.corpus)
    queries = [json.loads(line)["text"] for line in args.queries_file.open()][: args.queries]
    with tempfile.TemporaryDirectory(prefix="keyword-counts-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pgdata")
        server.start()
        url = server.uri("postgres")
        try:
            database = seed(url, args.size, texts)
            with database.connection() as conn:
                for table in ("memory_entries", "document_chunks"):
                    row = conn.execute(f"SELECT reltuples, (SELECT count(*) FROM {table}) AS n"
                                       f" FROM pg_class WHERE oid = '{table}'::regclass").fetchone()
                    column = bm25.column_stats(conn, table)
                    print(f"{table}: {row['n'] if row else 0} rows, reltuples {column.total:.0f},"
                          f" statistics describe up to {column.describes:.0f}")
            index = PostgresKnowledgeIndex(Database(url, max_size=2))
            counting = {"statistics read": False, "counted locally": True}

            def run(arm: str, chunk: list[str], first: int) -> list[float]:
                bm25.counts_locally = lambda n, column, limits=bm25.KeywordLimits(), _local=counting[arm]: _local  # type: ignore[assignment]
                return bench.time_preset(index, PROJECT, bench.MEMORY_ID, chunk, "hybrid", first)

            samples = bench.take_turns(list(counting), queries, run)
            print(f"\nhybrid search, {args.size:,} facts + {args.size:,} chunks, {len(queries)} queries an arm, taking turns")
            for arm, values in samples.items():
                print(f"  {arm}: p50 {statistics.median(values):.1f} ms, p95 {bench.percentile(values, 95):.1f} ms")
            index.close()
            database.close()
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
