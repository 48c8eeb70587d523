"""Ports of the memory lifecycle (issue 15): expiry sweeps, forgetting, export and import."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Protocol


class ExpiryRepository(Protocol):
    """Invalidates entries whose ``expires_at`` passed (all projects: an operator job)."""

    def invalidate_expired(self, *, now: datetime, limit: int) -> int:
        """Invalidates up to ``limit`` live entries with ``expires_at <= now`` (reason ``expired``,
        ``invalidated_at`` = their ``expires_at``); returns how many."""
        ...


class ForgetRepository(Protocol):
    """Hard deletes of what came from a conversation or concerns an entity, scoped by project.
    Each method runs in one transaction and returns ``{entries, episodes, extraction_runs,
    entities}`` counts of the rows deleted (zeros when there was nothing left: idempotent)."""

    def forget_conversation(self, project_id: str, conversation_id: str, *, memory_id: str | None) -> dict[str, int]:
        """Raises NotFound when ``memory_id`` is given and not in the project."""
        ...
    def forget_entity(self, project_id: str, memory_id: str, entity: str) -> dict[str, int]:
        """``entity`` is a normalized entity name. Raises NotFound when the memory is not in the project."""
        ...
    def purge_memory(self, project_id: str, memory_id: str) -> dict[str, int]:
        """Deletes the memory and everything from it. Raises NotFound."""
        ...


class ExportRepository(Protocol):
    """Reads a memory for export, page by page (nothing holds the whole memory in memory)."""

    def memory_record(self, project_id: str, memory_id: str) -> dict[str, Any]:
        """Raises NotFound."""
        ...
    def entry_records(self, project_id: str, memory_id: str, *, vectors: bool) -> Iterator[dict[str, Any]]:
        """Every entry (live and history), oldest first, with ``entities`` ``[{name, type, role}]``
        and, with ``vectors``, ``embedding`` (a list or None)."""
        ...
    def episode_records(self, project_id: str, memory_id: str, *, vectors: bool) -> Iterator[dict[str, Any]]: ...
