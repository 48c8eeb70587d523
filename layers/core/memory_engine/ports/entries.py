"""Repository ports for memories and memory entries.

Every method takes the caller's ``project_id`` and treats another project's rows as absent
(NotFound, never Forbidden), so a key can never learn that a foreign id exists.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memory_engine.domain.cursor import Cursor
from memory_engine.domain.entities import NewEntityLink
from memory_engine.domain.entries import Memory, MemoryEntry, NewEntry
from memory_engine.ports.embedder import Vector
from memory_engine.ports.episodes import EpisodeWindow, TurnBefore


@dataclass(frozen=True)
class Candidate:
    """A live entry of the memory and its cosine similarity to the new fact."""

    entry: MemoryEntry
    similarity: float


@dataclass(frozen=True)
class EntityVectors:
    """Vectors for entity display names (``None`` when embedding failed), keyed by normalized name."""

    by_key: dict[str, Vector | None]


@dataclass(frozen=True)
class EntryChanges:
    """A replacement of some fields of an entry (``fields`` holds only what the caller sent)."""

    fields: dict[str, Any]
    embedding: Vector | None
    reembed: bool
    links: list[NewEntityLink] | None = None
    entity_vectors: EntityVectors | None = None


@dataclass(frozen=True)
class Deletion:
    """Entries deleted, and the conversation turns whose vector read one of them (the turn right
    after a deleted turn embeds it as its context): cleared, to be embedded again
    (:func:`memory_engine.services.memories.embed_cleared`)."""

    deleted: frozenset[str] = frozenset()
    cleared: tuple[str, ...] = ()


@dataclass(frozen=True)
class Replaced:
    """An entry after a replacement, and the turns whose vector read its old text (as :class:`Deletion`)."""

    entry: MemoryEntry
    cleared: tuple[str, ...] = ()


class MemoryRepository(Protocol):
    def create(
        self, project_id: str, *, name: str, description: str | None = None, tags: Sequence[str] = (),
        metadata: dict[str, Any] | None = None, default_ttl: int | None = None,
    ) -> Memory: ...
    def get(self, project_id: str, memory_id: str) -> Memory:
        """Raises NotFound unless the memory exists in the project."""
        ...
    def list(
        self, project_id: str, *, tag_globs: Sequence[str] = (), limit: int = 20, cursor: Cursor | None = None
    ) -> tuple[list[Memory], str | None]: ...
    def update(self, project_id: str, memory_id: str, fields: dict[str, Any]) -> Memory:
        """Replaces the given columns (name, description, tags, metadata, default_ttl). Raises NotFound."""
        ...
    def delete(self, project_id: str, memory_id: str) -> None:
        """Deletes the memory and its entries. Raises NotFound."""
        ...


class EntryWriteSession(Protocol):
    """One transaction holding the memory's write lock (see ``EntryRepository.write_session``)."""

    def shortlist(self, embedding: Vector, k: int, *, content: str | None = None,
                  own: Vector | None = None) -> list[Candidate]:
        """The ``k`` most similar live entries of the memory, most similar first. A live entry
        whose content equals ``content`` is looked up exactly (the vector scan is approximate and
        could miss it) and counts as 1.0. With ``own`` (the fact's own vector, when ``embedding``
        read a context too), an entry's similarity is the lower of ``embedding``'s and ``own``'s
        (against the nearer of the entry's vectors): the context alone makes no duplicate."""
        ...
    def find_live_by_content(self, content: str) -> MemoryEntry | None:
        """A live entry with exactly this content (dedup when the new fact has no vector)."""
        ...
    def get_live(self, entry_id: str) -> MemoryEntry | None: ...
    def insert(
        self, entry: NewEntry, *, content: str, embedding: Vector | None, links: Sequence[NewEntityLink],
        entity_vectors: EntityVectors, context: str | None = None, own_embedding: Vector | None = None,
    ) -> MemoryEntry:
        """A new live entry; ``embedding`` read its ``context`` too when it has one, and then
        ``own_embedding`` is the vector of its own text (a conversation turn's two vectors)."""
        ...
    def merge_into(
        self, entry_id: str, *, content: str, embedding: Vector | None, fields: dict[str, Any],
        links: Sequence[NewEntityLink], entity_vectors: EntityVectors,
    ) -> MemoryEntry:
        """Rewrites a live entry in place (content, embedding, ``fields``) and adds entity links;
        provenance columns are never touched. ``embedding`` is of the merged content alone: the
        entry keeps no second, own vector."""
        ...
    def invalidate(self, entry_id: str, *, superseded_by: str, reason: str) -> None: ...
    def extend_context(self, entry_id: str, text: str) -> None:
        """Appends a line (the turn that follows it) to a live entry's context; its vector, content
        and ``updated_at`` are unchanged (only what keyword search indexes grows)."""
        ...


class EntryRepository(Protocol):
    def write_session(self, project_id: str, memory_id: str) -> contextlib.AbstractContextManager[EntryWriteSession]:
        """A transaction that holds ``pg_advisory_xact_lock`` on the memory: writes to one memory
        are serialized. Raises NotFound when the memory is not in the project."""
        ...

    def one_transaction(
        self, project_id: str, memory_ids: Sequence[str]
    ) -> contextlib.AbstractContextManager[EntryBatchTransaction]:
        """A view of this repository whose write sessions share one transaction, committed when
        the block ends: a batch of writes pays one commit (one disk
        flush) instead of one per fact, and each write sees the ones before it. The write locks of
        ``memory_ids`` (those in the project) are taken up front in a fixed order, so two batches
        cannot deadlock. A database failure rolls the whole block back."""
        ...

    def conversation_context(self, project_id: str, memory_id: str, conversation_id: str) -> tuple[str, str] | None:
        """``(id, "<subject>: <content>")`` of the most recent live entry of ``conversation_id``
        in the memory (the content alone when it has no subject); None when there is none."""
        ...
    def get(self, project_id: str, entry_id: str) -> MemoryEntry:
        """Any entry of the project, invalidated ones too (audit). Raises NotFound."""
        ...
    def list(
        self, project_id: str, *, memory_id: str | None, include_invalidated: bool = False, limit: int = 20,
        cursor: Cursor | None = None,
    ) -> tuple[list[MemoryEntry], str | None]:
        """Newest first. Raises NotFound when ``memory_id`` is not in the project."""
        ...
    def replace(self, project_id: str, entry_id: str, changes: EntryChanges) -> Replaced:
        """Replaces fields of a live entry under the memory's write lock; a turn's old line leaves the
        contexts of the turns around it, as on :meth:`delete`.
        Raises NotFound, or Conflict when the entry is invalidated (history is immutable)."""
        ...
    def delete(self, project_id: str, entry_id: str) -> Deletion:
        """Deletes the entry and takes a turn's words out of the contexts of the turns around it
        (``adapters/postgres/entry_context.py``). Raises NotFound."""
        ...
    def delete_many(self, project_id: str, entry_ids: Sequence[str]) -> Deletion:
        """Deletes the project's entries among ``entry_ids`` (others: absent), as :meth:`delete` does."""
        ...
    def uncovered(self, project_id: str, entry_ids: Sequence[str]) -> Sequence[tuple[str, str]]:
        """``(id, text to embed)`` of those of ``entry_ids`` still without a vector (the text
        ``memory-engine reembed`` embeds)."""
        ...
    def store_vectors(self, project_id: str, vectors: Sequence[tuple[str, Vector]]) -> int:
        """Sets the vectors of entries still without one; returns how many were set."""
        ...


#: Tables whose rows may be stored without a vector (embedding is best-effort) and can be repaired.
REPAIRABLE_TABLES = ("memory_entries", "entities", "episodes", "document_chunks")


class EmbeddingRepairRepository(Protocol):
    """Finds rows stored without a vector and stores repaired vectors (all projects: an operator tool).
    An episode misses vectors while its windows do not cover its whole transcript."""

    def count_missing(self, table: str) -> int: ...
    def missing(self, table: str, *, after_id: str | None, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` ``(id, text to embed)`` pairs with ``id > after_id``, by id."""
        ...
    def store(self, table: str, vectors: Sequence[tuple[str, Vector]]) -> int:
        """Sets the vectors of rows still missing one; returns how many were set (not episodes)."""
        ...
    def store_windows(self, episodes: Sequence[tuple[str, Sequence[EpisodeWindow]]]) -> int:
        """Replaces each episode's vector windows (``missing("episodes")`` gives the transcripts they span)
        and sets its own vector when it had none; returns how many episodes were repaired."""
        ...
    def count_unread(self) -> int:
        """Recorded turns that fit in one window with the turn before them and have no window over
        it (ports.episodes.TurnBefore; turns recorded before migration 0014, or while the model failed)."""
        ...
    def unread(self, *, after_id: str | None, limit: int) -> list[tuple[str, TurnBefore]]:
        """Up to ``limit`` of those as ``(project id, turn)``, with ``id > after_id``, by id."""
        ...
    def store_read_windows(self, project_id: str, windows: Sequence[tuple[TurnBefore, Vector]]) -> int:
        """As :meth:`memory_engine.ports.episodes.EpisodeRepository.store_read_windows`."""
        ...


@dataclass(frozen=True)
class ShortlistRequest:
    """One new fact in :meth:`EntryBatchTransaction.shortlists`; ``stored``: run its shortlist
    query (False when its memory held no live entry as the batch began: nothing to find)."""

    memory_id: str
    embedding: Vector
    content: str
    stored: bool = True


@dataclass(frozen=True)
class Comparisons:
    """What :meth:`EntryBatchTransaction.shortlists` answers: each request's shortlist (empty when
    not run), the similarity of each pair ``(i, j)``, ``i < j``, of requests to the same memory,
    and of each ``(written entry id, j)`` of the same memory."""

    candidates: list[list[Candidate]]
    among: dict[tuple[int, int], float]
    to_written: dict[tuple[str, int], float]


@dataclass(frozen=True)
class EntryInsert:
    """One new entry in :meth:`EntryBatchTransaction.write_in_order` (as ``EntryWriteSession.insert``,
    with the id chosen by the caller, so a later step can read it). It has one vector: a fact whose
    vector read a context is decided and written by the funnel itself, which stores its own vector."""

    memory_id: str
    entry: NewEntry
    content: str
    embedding: Vector | None
    links: Sequence[NewEntityLink]
    entity_vectors: EntityVectors
    context: str | None
    entry_id: str


@dataclass(frozen=True)
class EntryRead:
    """A live entry read at its place in :meth:`EntryBatchTransaction.write_in_order`."""

    memory_id: str
    entry_id: str


class EntryBatchTransaction(EntryRepository, Protocol):
    """What ``EntryRepository.one_transaction`` yields: the repository on the batch's transaction,
    plus the set-based steps a batch of manual writes is made of (each statement the same as the
    write funnel's, sent together: one round trip for many facts)."""

    def writable(self, memory_id: str) -> bool:
        """The memory is in the project and its write lock is held by this transaction."""
        ...

    def held_entries(self, memory_id: str) -> bool:
        """The memory held a live entry when the transaction began (took its lock)."""
        ...

    def shortlists(self, requests: Sequence[ShortlistRequest], k: int, *, written: Sequence[str] = ()) -> Comparisons:
        """Each request's shortlist, as ``EntryWriteSession.shortlist`` answers it now (the
        requests do not see each other), and the cosine similarity of each request to the requests
        before it and to the entries ``written`` of its memory, computed as the shortlist computes
        it (one round trip)."""
        ...

    def write_in_order(self, steps: Sequence[EntryInsert | EntryRead]) -> list[MemoryEntry | None]:
        """The steps in order (each sees the ones before it): an insert answers the new entry, a
        read the live entry (None when it is not live)."""
        ...
