"""Export a memory as JSONL and import it into a project: the way to leave or move a memory.

The export is a stream of lines, one JSON object each, in this order: ``header`` (format, version,
the embedding model id and dimensions, whether vectors are included), ``memory``, ``entity`` (those
the entries link), ``entry`` (live and history, oldest first, with provenance, entity links and
``superseded_by_entry_id``), ``episode``. Nothing holds the whole memory: rows are read through a
server-side cursor and written out line by line.

The records of those lines are parsed by the models below (the import, ``services.memory_import``,
reads them back).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, FiniteFloat

from memory_engine.domain.entries import EntityRole, SourceType, Tags
from memory_engine.domain.validation import JsonObject, Text, Timestamp, json_problem
from memory_engine.ports.embedder import Embedder
from memory_engine.ports.lifecycle import ExportRepository

EXPORT_FORMAT = "memory-engine.memory"
EXPORT_VERSION = 1


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
                if "own_embedding" in row:  # an entry's: a turn's own vector (migration 0011), else null
                    row["own_embedding"] = _vector_list(row["own_embedding"])
            yield _line({"type": kind, **row})


# --- the records of the file, parsed at the edge ---

def _storable_messages(value: list[Any]) -> list[Any]:
    """An episode's messages are stored as ``jsonb``: the rule of every stored JSON value (as metadata)."""
    problem = json_problem(value)
    if problem:
        raise ValueError(f"messages {problem}")
    return value


#: A vector of the file: finite numbers only (PostgreSQL's vector type refuses NaN and infinity).
FileVector = list[FiniteFloat]

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
    embedding: FileVector | None = None


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
    embedding: FileVector | None = None
    #: a turn's vector of its own text when ``embedding`` read its ``context`` too (absent in files
    #: exported before migration 0011: the importer embeds it)
    own_embedding: FileVector | None = None


class EpisodeRecord(_Record):
    type: Literal["episode"]
    id: Text
    conversation_id: Text | None = None
    turn_id: Text | None = None
    event_id: Text | None = None
    occurred_at: Timestamp | None = None
    transcript: Text
    messages: Annotated[list[Any], AfterValidator(_storable_messages)] = Field(default_factory=list)
    created_at: Timestamp
    embedding: FileVector | None = None
