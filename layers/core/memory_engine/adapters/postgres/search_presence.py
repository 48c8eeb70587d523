"""Whether a project has document chunks at all, so that a search of a project without any (an agent's
memories alone) does not run the documents' statements for nothing: each is a lane of its own (a
pooled connection, its transaction, the statement) or, in a hybrid search, two or three statements."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

import psycopg

_T = TypeVar("_T")

#: A project seen with chunks is checked again after this long (running the documents' statements
#: for a project that has none since is only slower, never wrong).
RECHECK_S: Final = 60.0
#: At most this many projects are remembered per process (then the record starts over).
MAX_PROJECTS: Final = 10_000

_ANY_CHUNK = "SELECT EXISTS (SELECT 1 FROM document_chunks WHERE project_id = %(project_id)s) AS has_chunks"


class DocumentPresence:
    """Per process, what the last check of each project found. A project last seen without a chunk
    is searched without its documents, and each such search checks, on the connection of one of its
    facts' statements, that it still has none; when it has (the first search after its first
    document in this process), the search runs again with them. So a document is found as soon as
    it is ready, as before."""

    def __init__(self, recheck_s: float = RECHECK_S, max_projects: int = MAX_PROJECTS) -> None:
        self._recheck = recheck_s
        self._max = max_projects
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[bool, float]] = {}

    def plan(self, project_id: str) -> tuple[bool, bool]:
        """``(leave the documents out, check)`` for a search of ``project_id`` now."""
        with self._lock:
            seen = self._seen.get(project_id)
        if seen is None:
            return False, True
        has_chunks, at = seen
        return not has_chunks, not has_chunks or time.monotonic() - at >= self._recheck

    def record(self, project_id: str, has_chunks: bool) -> None:
        with self._lock:
            if len(self._seen) >= self._max:
                self._seen.clear()
            self._seen[project_id] = (has_chunks, time.monotonic())

    @staticmethod
    def checking(task: Callable[[psycopg.Connection[Any]], _T], project_id: str,
                 answer: list[bool]) -> Callable[[psycopg.Connection[Any]], _T]:
        """``task``, then the check on the same connection, its answer appended to ``answer``."""
        def run(conn: psycopg.Connection[Any]) -> _T:
            out = task(conn)
            row = conn.execute(_ANY_CHUNK, {"project_id": project_id}).fetchone()
            answer.append(bool(row and row["has_chunks"]))
            return out
        return run
