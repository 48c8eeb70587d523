"""`memory-engine migrate`: apply pending migrations (idempotent; safe to run concurrently)."""

from __future__ import annotations

import argparse
from typing import Any

from memory_engine.adapters.postgres.migrations import migrate
from memory_engine.local.engine import open_database
from memory_engine.settings import Settings


def register(sub: Any) -> None:
    parser = sub.add_parser("migrate", help="apply database migrations")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    database = open_database(settings)
    try:
        applied = migrate(database.url, embedding_dim=settings.resolved_embedding_dimensions)
    finally:
        database.stop()
    print(f"applied {len(applied)} migration(s): {', '.join(applied)}" if applied else "schema is up to date")
    return 0
