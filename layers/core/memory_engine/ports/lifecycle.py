"""Ports of the memory lifecycle: expiry sweeps, forgetting, export and import."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memory_engine.domain.entries import Memory, MemoryEntry
from memory_engine.ports.embedder import Vector
from memory_engine.ports.episodes import EpisodeWindow


class ExpiryRepository(Protocol):
    """Invalidates entries whose ``expires_at`` passed (all projects: an operator job)."""

    def invalidate_expired(self, *, now: datetime, limit: int) -> int:
        """Invalidates up to ``limit`` live entries with ``expires_at <= now`` (reason ``expired``,
        ``invalidated_at`` = their ``expires_at``); returns how many."""
        ...


@dataclass(frozen=True)
class Forgotten:
    """``counts``: ``{entries, episodes, extraction_runs, entities}`` deleted; ``cleared``: the
    turns left whose vector read a deleted turn (cleared, to be embedded again; ports.entries.Deletion);
    ``episodes_around``: the recorded turns that were next to a deleted one (ports.episodes.TurnsDeleted)."""

    counts: dict[str, int]
    cleared: tuple[str, ...] = ()
    episodes_around: tuple[str, ...] = ()


class ForgetRepository(Protocol):
    """Hard deletes of what came from a conversation or concerns an entity, scoped by project.
    Each method runs in one transaction and returns the counts of the rows deleted (zeros when
    there was nothing left: idempotent); a deleted turn's words leave the contexts of the turns
    around it (ports.entries.EntryRepository.delete)."""

    def forget_conversation(self, project_id: str, conversation_id: str, *, memory_id: str | None) -> Forgotten:
        """Raises NotFound when ``memory_id`` is given and not in the project."""
        ...
    def forget_entity(self, project_id: str, memory_id: str, entity: str) -> Forgotten:
        """``entity`` is a normalized entity name. Raises NotFound when the memory is not in the project."""
        ...
    def purge_memory(self, project_id: str, memory_id: str) -> Forgotten:
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
    def entity_records(self, project_id: str, memory_id: str, *, vectors: bool) -> Iterator[dict[str, Any]]:
        """The entities the memory's entries link: ``name`` (normalized), ``display_name``, ``entity_type``."""
        ...
    def episode_records(self, project_id: str, memory_id: str, *, vectors: bool) -> Iterator[dict[str, Any]]: ...


class LifecycleRepository(ForgetRepository, ExportRepository, Protocol):
    """Forgetting and the reads of an export, on one store."""


@dataclass(frozen=True)
class ImportedEntity:
    key: str
    display_name: str
    type: str | None
    embedding: Vector | None


@dataclass(frozen=True)
class ImportedEntry:
    """An entry to restore as it was exported (history included): ``entry`` under its new id, its
    ``superseded_by_entry_id`` left unset (:meth:`ImportRepository.link_superseded` re-points it once
    every row exists); ``links`` are ``(entity key, role)``."""

    entry: MemoryEntry
    embedding: Vector | None
    links: list[tuple[str, str]]
    #: a turn's own vector when ``embedding`` read its context too (``EntryWriteSession.insert``)
    own_embedding: Vector | None = None


@dataclass(frozen=True)
class ImportedEpisode:
    conversation_id: str | None
    turn_id: str | None
    event_id: str | None
    occurred_at: datetime | None
    transcript: str
    messages: list[Any]
    #: vectors over the whole transcript, as a recorded turn gets them (none when the model failed)
    windows: Sequence[EpisodeWindow]
    created_at: datetime


@dataclass(frozen=True)
class ImportedMemory:
    """The memory an import creates (``metadata`` holds ``imported_from`` and, while a staged import
    runs, ``import_status: "partial"``)."""

    id: str
    name: str
    description: str | None
    tags: list[str]
    metadata: dict[str, Any]
    default_ttl: int | None


class ImportRepository(Protocol):
    """Restores exported rows into a project (the caller's). Each call is its own transaction,
    except inside :meth:`transaction`, where all of them are one."""

    def transaction(self) -> AbstractContextManager[None]:
        """Every call of this repository inside the block runs in one transaction: committed when
        the block ends, rolled back when it raises (nothing of it stored)."""
        ...
    def create_memory(self, project_id: str, memory: ImportedMemory) -> Memory: ...
    def discard_partial(self, project_id: str, exported_id: str) -> list[str]:
        """Deletes the project's memories an unfinished import of the exported memory ``exported_id``
        left (``metadata.import_status`` ``"partial"``) with everything in them; their ids."""
        ...
    def finish(self, project_id: str, memory_id: str) -> Memory:
        """Marks a staged import complete (removes ``metadata.import_status``). Raises NotFound."""
        ...
    def upsert_entities(self, project_id: str, entities: Sequence[ImportedEntity]) -> None:
        """An entity the project already has keeps its own type and vector where it has them."""
        ...
    def insert_entries(self, project_id: str, memory_id: str, entries: Sequence[ImportedEntry]) -> None: ...
    def link_superseded(self, project_id: str, pairs: Sequence[tuple[str, str]]) -> None: ...
    def insert_episodes(self, project_id: str, memory_id: str, episodes: Sequence[ImportedEpisode]) -> list[str]:
        """The ids of the episodes stored (an event id the project already has is skipped)."""
        ...
