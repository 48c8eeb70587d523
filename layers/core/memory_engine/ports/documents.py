"""The document repository port (documents, their chunks, reading ingestion rules)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memory_engine.domain.documents import Chunk, ChunkSettings, ChunkSource, Document, DocumentStatus
from memory_engine.domain.ingestion_rules import IngestionRule
from memory_engine.ports.embedder import Vector


@dataclass(frozen=True)
class NewDocument:
    """What is known about a document before its pipeline run."""

    path: str
    content_type: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    source_bucket: str | None = None
    source_key: str | None = None
    title: str | None = None
    tags: Sequence[str] = ()
    metadata: dict[str, Any] | None = None
    chunk_settings: ChunkSettings | None = None  # None: keep the row's (or the column default)
    #: where ``chunk_settings`` came from (None: keep the row's; ``prepare`` with settings: ``request``)
    chunk_settings_source: ChunkSource | None = None
    #: the ingestion rule that applies (recorded on begin_ingest; None there: no rule)
    ingestion_rule_id: str | None = None


@dataclass(frozen=True)
class IngestDecision:
    document: Document
    started: bool  # False: same bytes already there (processing or ready): nothing to do
    reason: str


class DocumentRepository(Protocol):
    """Every method is scoped by ``project_id``; another project's document is NotFound.
    Raises :class:`memory_engine.errors.DatabaseError` when the database fails."""

    def get(self, project_id: str, document_id: str) -> Document:
        """Raises NotFound."""
        ...

    def find_by_path(self, project_id: str, path: str) -> Document | None: ...

    def list_processing(self) -> list[Document]:
        """Every project's documents in ``processing`` (the local engine resumes them at start)."""
        ...

    def fail_stale_pending(self, *, older_than: datetime, error: str, project_id: str | None = None) -> int:
        """Every ``pending`` document (an upload URL was handed out, no upload arrived) last
        touched before ``older_than`` -> ``failed`` with ``error`` (all projects unless
        ``project_id``). Returns how many. A late upload still ingests it (register moves any
        status to ``processing``)."""
        ...

    def list_documents(self, project_id: str, *, path_prefix: str | None = None, tags: Sequence[str] = (),
             status: DocumentStatus | None = None, limit: int = 20,
             cursor: str | None = None) -> tuple[list[Document], str | None]:
        """Newest first; raises BadRequest for a malformed cursor."""
        ...

    def delete(self, project_id: str, document_id: str) -> Document:
        """Deletes the row and its chunks; raises NotFound."""
        ...

    def prepare(self, project_id: str, new: NewDocument, *, default_settings: ChunkSettings) -> Document:
        """Create the row as ``pending`` (or update title/tags/metadata/settings of an existing
        one, leaving its status and chunks alone). Used before an upload."""
        ...

    def begin_ingest(self, project_id: str, new: NewDocument, *, default_settings: ChunkSettings,
                     force: bool = False) -> IngestDecision:
        """Atomically (row lock): unless ``force``, a row with the same sha256 that is
        ``processing`` or ``ready`` is left alone (``started=False``). Otherwise the row is
        created/updated with ``new``, ``ingest_generation`` is bumped past both generations,
        counters reset and status set to ``processing``; the active chunks stay searchable."""
        ...

    def begin_reingest(self, project_id: str, document_id: str, settings: ChunkSettings,
                       source: ChunkSource | None = None) -> Document:
        """New chunk settings (from ``source``; None: keep the recorded source) and a new
        generation, status ``processing``. Raises NotFound."""
        ...

    def set_progress(self, project_id: str, document_id: str, generation: int, *,
                     total_pages: int | None = None, total_chunks: int | None = None) -> bool:
        """False when ``generation`` is no longer the one being built (the run was superseded)."""
        ...

    def record_extraction(self, project_id: str, document_id: str, generation: int, found: dict[str, Any], *,
                          title: str | None = None, reset: bool = False) -> bool:
        """Merges ``found`` (what the engine learnt reading the file: the type the bytes said
        against the declared one, e-mail headers, notes on what was bounded) into the document's
        ``metadata.extracted`` (``reset``: replaces it), and sets ``title`` when the document has
        none. The caller's own metadata keys are never touched. False when ``generation`` is no
        longer the one being built."""
        ...

    def upsert_chunks(self, project_id: str, document_id: str, generation: int,
                      chunks: Sequence[Chunk], vectors: Sequence[Vector | None]) -> int | None:
        """Idempotent on (document, generation, chunk_index). Returns the generation's chunk
        count (stored as ``indexed_chunks``), or None when the run was superseded."""
        ...

    def finalize(self, project_id: str, document_id: str, generation: int) -> str | None:
        """In one transaction: ``active_generation = generation``, other generations' chunks
        deleted, status ``ready``; returns the document's path. None (and nothing changed) when
        superseded."""
        ...

    def mark_failed(self, project_id: str, document_id: str, generation: int | None, error: str) -> bool:
        """Status ``failed`` + error, unless a newer run owns the document (then False).
        The active chunks stay (still searchable)."""
        ...

    def list_rules(self, project_id: str) -> list[IngestionRule]:
        """The project's ingestion rules, oldest first."""
        ...
