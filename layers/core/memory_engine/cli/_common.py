"""Shared plumbing for CLI commands that talk to the database directly."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from memory_engine.adapters.postgres.migrations import migrate
from memory_engine.bootstrap import set_container
from memory_engine.local.container import LocalContainer
from memory_engine.local.engine import open_database
from memory_engine.settings import Settings


@contextlib.contextmanager
def local_container(*, migrate_first: bool = True) -> Iterator[LocalContainer]:
    """A container on `DATABASE_URL` or the embedded server (started or attached), migrated."""
    settings = Settings()
    database = open_database(settings)
    container = LocalContainer(settings.model_copy(update={"database_url": database.url}))
    try:
        if migrate_first:
            migrate(database.url, embedding_dim=container.settings.resolved_embedding_dimensions)
        set_container(container)
        yield container
    finally:
        set_container(None)
        container.close()
        database.stop()
