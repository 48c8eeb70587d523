"""`memory-engine reembed`: embed rows stored without a vector (entries, entities, episodes, chunks)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memory_engine.ports.entries import REPAIRABLE_TABLES


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "reembed", help="repair entries, entities, episodes and document chunks stored without a vector"
    )
    parser.add_argument("--batch-size", type=int, default=64, help="rows per embedding call (default 64)")
    parser.add_argument(
        "--table", action="append", choices=REPAIRABLE_TABLES, help="only this table (repeatable; default all)"
    )
    parser.add_argument("--dry-run", action="store_true", help="only count the rows missing a vector")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memory_engine.adapters.postgres.embedding_repair import PostgresEmbeddingRepair
    from memory_engine.cli._common import local_container
    from memory_engine.services.reembed import RepairProgress, reembed_missing

    if args.batch_size < 1:
        print("error: --batch-size must be at least 1", file=sys.stderr)
        return 2
    tables = tuple(args.table or REPAIRABLE_TABLES)
    with local_container() as container:
        repair = PostgresEmbeddingRepair(container.database)
        if args.dry_run:
            for table in tables:
                print(f"{table}: {repair.count_missing(table)} row(s) without a vector")
            return 0

        def report(p: RepairProgress) -> None:
            print(f"{p.table}: {p.done}/{p.total} re-embedded", flush=True)

        repaired = reembed_missing(repair, container.embedder, tables=tables, batch_size=args.batch_size, progress=report)
    summary = ", ".join(f"{table} {count}" for table, count in repaired.items())
    print(f"done: {summary}")
    return 0
