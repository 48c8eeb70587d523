"""The port the MCP tools call: one method per engine operation they need, answering the HTTP API's
JSON wire shapes (plain dicts), so the tools format the same thing whether the engine is in this
process (``InProcessBackend``) or behind a URL (``RemoteBackend``).

Every method raises :class:`memory_engine.errors.MemoryEngineError` (its ``code`` and ``message`` are
the SPEC error's): Unauthorized / Forbidden for the key, NotFound, InvalidInput, PayloadTooLarge,
DependencyError when the engine or a backing service is unavailable.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

Json = dict[str, Any]


class EngineBackend(ABC):
    """What an MCP session may do, as the caller's API key allows it."""

    @abstractmethod
    def search(self, body: Json) -> Json:
        """``POST /v1/knowledge/search`` (scope read)."""

    @abstractmethod
    def write_entry(self, body: Json) -> Json:
        """``POST /v1/memory-entries`` (scope write): the entry plus ``action``."""

    @abstractmethod
    def list_memories(self, *, tags: list[str] | None, limit: int, cursor: str | None) -> Json:
        """``GET /v1/memories`` (scope read): ``{data, next_cursor}``."""

    @abstractmethod
    def create_memory(self, body: Json) -> Json:
        """``POST /v1/memories`` (scope write)."""

    @abstractmethod
    def list_entries(self, *, memory_id: str, include_invalidated: bool, limit: int, cursor: str | None) -> Json:
        """``GET /v1/memory-entries`` (scope read): ``{data, next_cursor}``."""

    @abstractmethod
    def delete_entry(self, entry_id: str) -> None:
        """``DELETE /v1/memory-entries/{id}`` (scope write)."""

    @abstractmethod
    def create_document(self, body: Json) -> Json:
        """``POST /v1/documents`` (scope write)."""

    @abstractmethod
    def document_status(self, document_id: str) -> Json:
        """``GET /v1/documents/{id}/status`` (scope read)."""
