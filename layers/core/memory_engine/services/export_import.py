"""Export a memory as JSONL and import it into a project: the way to leave or move a memory.

The export is a stream of lines, one JSON object each, in this order: ``header`` (format, version,
the embedding model id and dimensions, whether vectors are included), ``memory``, ``entity`` (those
the entries link), ``entry`` (live and history, oldest first, with provenance, entity links and
``superseded_by_entry_id``), ``episode``. Nothing holds the whole memory: rows are read through a
server-side cursor and written out line by line.

The import reads the same lines as they come and writes in chunks: a new memory in the caller's
project, every row under a new id with the old one kept (``metadata.imported_from`` on the memory
and entries), timestamps, history and provenance as they were. Vectors in the file are used only
when the file's model id and dimensions are this deployment's; otherwise (or when a row has none)
the row is embedded again with this deployment's model, so a project never mixes two models'
vectors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_engine.domain.entities import NewEntityLink, anchor_name, display_entity_name, embedding_text, normalize_entity_name
from memory_engine.domain.entries import EntityRole, EntryEntity, Memory, MemoryEntry, SourceType, Tags
from memory_engine.domain.validation import JsonObject, Text, Timestamp
from memory_engine.errors import InvalidInput, invalid_input
from memory_engine.ports.embedder import Embedder, Vector
from memory_engine.ports.entries import MemoryRepository
from memory_engine.ports.lifecycle import (
    ExportRepository,
    ImportedEntity,
    ImportedEntry,
    ImportedEpisode,
    ImportRepository,
)
from memory_engine.services.write_entry import embed_best_effort

EXPORT_FORMAT = "memory-engine.memory"
EXPORT_VERSION = 1
#: Rows written per chunk on import (one embedding call and one insert per chunk).
IMPORT_CHUNK = 200
#: Metadata key holding the exported ids on imported rows.
IMPORTED_FROM = "imported_from"


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, default=_jsonable, ensure_ascii=False, separators=(",", ":")) + "\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _vector_list(value: Any) -> list[float] | None:
    return None if value is None else [float(x) for x in json.loads(value)] if isinstance(value, str) else list(value)


def export_memory(repo: ExportRepository, embedder: Embedder, project_id: str, memory_id: str, *,
                  vectors: bool = True) -> Iterator[str]:
    """The memory as JSONL lines. Raises NotFound (before the first line) when the memory is not
    in the project."""
    memory = repo.memory_record(project_id, memory_id)
    yield _line({"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                 "embedding_model": embedder.model_id if vectors else None,
                 "dimensions": embedder.dimensions if vectors else None, "vectors": vectors,
                 "exported_at": datetime.now(UTC)})
    yield _line({"type": "memory", **memory})
    for kind, rows in (("entity", repo.entity_records(project_id, memory_id, vectors=vectors)),
                       ("entry", repo.entry_records(project_id, memory_id, vectors=vectors)),
                       ("episode", repo.episode_records(project_id, memory_id, vectors=vectors))):
        for row in rows:
            if vectors:
                row["embedding"] = _vector_list(row.get("embedding"))
            yield _line({"type": kind, **row})


# --- the records of the file, parsed at the edge ---

class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HeaderRecord(_Record):
    type: Literal["header"]
    format: Literal["memory-engine.memory"]
    version: int = Field(ge=1, le=EXPORT_VERSION)
    embedding_model: Text | None = None
    dimensions: int | None = None
    vectors: bool = False


class MemoryRecord(_Record):
    type: Literal["memory"]
    id: Text
    name: Text = Field(min_length=1, max_length=200)
    description: Text | None = Field(None, max_length=2_000)
    tags: Tags = Field(default_factory=list)
    metadata: JsonObject | None = None
    default_ttl: int | None = Field(None, ge=1)


class EntityRecord(_Record):
    type: Literal["entity"]
    name: Text = Field(min_length=1, max_length=200)
    display_name: Text = Field(min_length=1, max_length=200)
    entity_type: Text | None = Field(None, max_length=64)
    embedding: list[float] | None = None


class EntryEntityRecord(_Record):
    name: Text = Field(min_length=1, max_length=200)
    type: Text | None = Field(None, max_length=64)
    role: EntityRole


class EntryRecord(_Record):
    type: Literal["entry"]
    id: Text
    content: Text = Field(min_length=1, max_length=8_000)
    source_type: SourceType = "manual"
    tags: Tags = Field(default_factory=list)
    metadata: JsonObject | None = None
    subject: Text | None = None
    predicate: Text | None = None
    object: Text | None = None
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    source_quote: Text | None = None
    context: Text | None = None
    valid_from: Timestamp | None = None
    valid_to: Timestamp | None = None
    source_conversation_id: Text | None = None
    source_generation_id: Text | None = None
    source_event_id: Text | None = None
    invalidated_at: Timestamp | None = None
    superseded_by_entry_id: Text | None = None
    invalidation_reason: Text | None = None
    expires_at: Timestamp | None = None
    created_at: Timestamp
    updated_at: Timestamp
    entities: list[EntryEntityRecord] = Field(default_factory=list, max_length=100)
    embedding: list[float] | None = None


class EpisodeRecord(_Record):
    type: Literal["episode"]
    id: Text
    conversation_id: Text | None = None
    turn_id: Text | None = None
    event_id: Text | None = None
    occurred_at: Timestamp | None = None
    transcript: Text
    messages: list[Any] = Field(default_factory=list)
    created_at: Timestamp
    embedding: list[float] | None = None


@dataclass
class ImportSummary:
    memory: Memory
    entries: int = 0
    entities: int = 0
    episodes: int = 0
    embedded: int = 0
    vectors_reused: bool = False
    #: exported id -> new id, for the memory's entries (ids only: ~60 bytes per entry)
    entry_ids: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, Any]:
        return {"memory": self.memory, "entries": self.entries, "entities": self.entities, "episodes": self.episodes,
                "embedded": self.embedded, "vectors_reused": self.vectors_reused}


def _parse(line_no: int, text: str, model: type[BaseModel]) -> Any:
    try:
        return model.model_validate(json.loads(text))
    except json.JSONDecodeError as error:
        raise InvalidInput(f"line {line_no} is not JSON: {error.msg}", details=[{"line": line_no}]) from error
    except ValidationError as error:
        raise invalid_input(error, f"line {line_no} is not a valid {model.__name__.removesuffix('Record').lower()} "
                                   "record") from error


_KINDS: dict[str, type[BaseModel]] = {"entity": EntityRecord, "entry": EntryRecord, "episode": EpisodeRecord}


def import_memory(lines: Iterable[str], *, project_id: str, memories: MemoryRepository, importer: ImportRepository,
                  embedder: Embedder) -> ImportSummary:
    """Recreate an exported memory in ``project_id``. Raises InvalidInput (422) naming the first
    bad line (the header and the memory must come first); rows before it are already stored."""
    numbered = ((n, text) for n, text in enumerate(lines, start=1) if text.strip())
    header: HeaderRecord = _parse(*_next(numbered, "header"), HeaderRecord)
    record: MemoryRecord = _parse(*_next(numbered, "memory"), MemoryRecord)
    memory = memories.create(
        project_id, name=record.name, description=record.description, tags=record.tags,
        metadata={**(record.metadata or {}), IMPORTED_FROM: {"id": record.id}}, default_ttl=record.default_ttl,
    )
    reuse = bool(header.vectors and header.embedding_model == embedder.model_id and header.dimensions == embedder.dimensions)
    writer = _Writer(ImportSummary(memory, vectors_reused=reuse), project_id, importer, embedder, reuse)
    for line_no, text in numbered:
        kind = _kind(line_no, text)
        writer.add(_parse(line_no, text, _KINDS[kind]))
    writer.finish()
    return writer.summary


def _next(numbered: Iterator[tuple[int, str]], what: str) -> tuple[int, str]:
    found = next(numbered, None)
    if found is None:
        raise InvalidInput(f"the import has no {what} line (expected a memory-engine export)",
                           details=[{"line": None, "expected": what}])
    return found


def _kind(line_no: int, text: str) -> str:
    try:
        kind = json.loads(text).get("type")
    except (json.JSONDecodeError, AttributeError):
        kind = None
    if kind not in _KINDS:
        raise InvalidInput(f"line {line_no}: `type` must be one of entity, entry, episode",
                           details=[{"line": line_no, "field": "type"}])
    return str(kind)


class _Writer:
    """Buffers records and writes them a chunk at a time (entities before the entries linking them)."""

    def __init__(self, summary: ImportSummary, project_id: str, importer: ImportRepository, embedder: Embedder,
                 reuse: bool) -> None:
        self.summary, self._project, self._importer, self._embedder, self._reuse = (
            summary, project_id, importer, embedder, reuse)
        self._entities: dict[str, EntityRecord] = {}
        self._known_entities: set[str] = set()
        self._entries: list[EntryRecord] = []
        self._episodes: list[EpisodeRecord] = []
        self._superseded: list[tuple[str, str]] = []  # (new id, exported id of the superseding entry)

    def add(self, record: Any) -> None:
        if isinstance(record, EntityRecord):
            self._entities[normalize_entity_name(record.name)] = record
        elif isinstance(record, EntryRecord):
            self._entries.append(record)
        else:
            self._episodes.append(record)
        if len(self._entities) + len(self._entries) + len(self._episodes) >= IMPORT_CHUNK:
            self._flush()

    def finish(self) -> None:
        self._flush()
        pairs = [(new, self.summary.entry_ids[old]) for new, old in self._superseded if old in self.summary.entry_ids]
        self._importer.link_superseded(self._project, pairs)

    def _vectors(self, texts: list[str], given: list[list[float] | None]) -> list[Vector | None]:
        """The file's vector where usable, else one embedding call for the rest (best-effort)."""
        out: list[Vector | None] = [np.asarray(v, dtype=np.float32) if self._reuse and v is not None
                                    and len(v) == self._embedder.dimensions else None for v in given]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            for i, vector in zip(missing, embed_best_effort(self._embedder, [texts[i] for i in missing]), strict=True):
                out[i] = vector
            self.summary.embedded += len(missing)
        return out

    def _flush(self) -> None:
        # entities named by entries without an entity line are created too (and embedded)
        for entry in self._entries:
            for ref in entry.entities:
                key = normalize_entity_name(ref.name)
                if key not in self._entities and key not in self._known_entities:
                    self._entities[key] = EntityRecord.model_validate(
                        {"type": "entity", "name": key, "display_name": display_entity_name(ref.name),
                         "entity_type": ref.type})
        entities = list(self._entities.items())
        if entities:
            vectors = self._vectors([e.display_name for _, e in entities], [e.embedding for _, e in entities])
            self._importer.upsert_entities(self._project, [
                ImportedEntity(key, e.display_name, e.entity_type, v) for (key, e), v in zip(entities, vectors, strict=True)])
            self._known_entities.update(key for key, _ in entities)
            self.summary.entities += len(entities)
        self._entities = {}
        if self._entries:
            self._write_entries(self._entries)
            self._entries = []
        if self._episodes:
            vectors = self._vectors([e.transcript for e in self._episodes], [e.embedding for e in self._episodes])
            self.summary.episodes += self._importer.insert_episodes(self._project, self.summary.memory.id, [
                ImportedEpisode(e.conversation_id, e.turn_id, e.event_id, e.occurred_at, e.transcript, e.messages, v,
                                e.created_at) for e, v in zip(self._episodes, vectors, strict=True)])
            self._episodes = []

    def _write_entries(self, records: list[EntryRecord]) -> None:
        from memory_engine import ids

        texts = []
        for r in records:
            links = [NewEntityLink(normalize_entity_name(x.name), x.name, x.type, x.role) for x in r.entities]
            texts.append(embedding_text(r.content, anchor_name(links), context=r.context))
        vectors = self._vectors(texts, [r.embedding for r in records])
        rows = []
        for r, vector in zip(records, vectors, strict=True):
            new_id = ids.new_id(ids.ENTRY)
            self.summary.entry_ids[r.id] = new_id
            if r.superseded_by_entry_id:
                self._superseded.append((new_id, r.superseded_by_entry_id))
            entry = MemoryEntry(
                **r.model_dump(exclude={"type", "id", "metadata", "entities", "embedding", "superseded_by_entry_id"}),
                id=new_id, project_id=self._project, memory_id=self.summary.memory.id,
                metadata={**(r.metadata or {}), IMPORTED_FROM: {"id": r.id}}, superseded_by_entry_id=None,
                entities=[EntryEntity(name=x.name, type=x.type, role=x.role) for x in r.entities])
            rows.append(ImportedEntry(entry, vector, [(normalize_entity_name(x.name), x.role) for x in r.entities]))
        self._importer.insert_entries(self._project, self.summary.memory.id, rows)
        self.summary.entries += len(rows)
