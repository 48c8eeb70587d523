"""Deferred conversions: the converter answered ``pending`` and delivers pages to a callback URL.

:class:`ConversionRepository` records each awaited conversion (one per document generation);
:class:`TaskCallbacks` resumes the waiting pipeline (Step Functions ``SendTaskSuccess`` /
``SendTaskFailure`` on AWS; locally the runner polls the repository, so it does nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True)
class Conversion:
    project_id: str
    document_id: str
    generation: int
    converter_url: str
    expires_at: datetime
    task_token: str | None = None
    pages_key: str | None = None
    total_pages: int | None = None
    error: str | None = None
    delivered_at: datetime | None = None

    @property
    def delivered(self) -> bool:
        return self.delivered_at is not None


class ConversionRepository(Protocol):
    """Raises :class:`memory_engine.errors.DatabaseError` when the database fails."""

    def open(self, project_id: str, document_id: str, generation: int, *, converter_url: str,
             expires_at: datetime) -> None:
        """Record (or reset) the awaited conversion of that generation."""
        ...

    def get(self, document_id: str, generation: int) -> Conversion | None: ...

    def attach_token(self, document_id: str, generation: int, task_token: str) -> Conversion | None:
        """Store the waiting state's task token; the row as it is now (None: no such conversion).
        If it is already ``delivered``, the caller resumes the pipeline itself (the callback came first)."""
        ...

    def deliver(self, document_id: str, generation: int, *, pages_key: str | None, total_pages: int | None,
                error: str | None) -> Conversion | None:
        """Mark delivered, once: the row after this delivery, or None when it was delivered before
        (or does not exist): a repeated callback changes nothing."""
        ...


class TaskCallbacks(Protocol):
    """Resumes a pipeline state that waits for a task token. Never raises for a token that is no
    longer waited on (the run timed out or ended): that is logged and ignored."""

    def succeed(self, task_token: str, output: dict[str, Any]) -> None: ...

    def fail(self, task_token: str, error: str, cause: str) -> None: ...
