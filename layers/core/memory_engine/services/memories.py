"""Use cases for memories and for reading, replacing and deleting entries.

Writes of new facts go through :func:`memory_engine.services.write_entry.write_entry`; this
module is the rest of the CRUD surface. Every function is scoped by ``project_id``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict, Field

from memory_engine.domain.cursor import DEFAULT_LIMIT, check_limit, decode_cursor
from memory_engine.domain.entities import entity_links
from memory_engine.domain.entries import (
    MAX_QUOTE_CHARS,
    EntityRef,
    Memory,
    MemoryEntry,
    ShortText,
    Tags,
    check_content,
    check_metadata,
    turn_speaker,
)
from memory_engine.domain.globs import tag_filter
from memory_engine.domain.requests import MemoryFields
from memory_engine.domain.validation import Float, JsonObject, Text, Timestamp, ValidityWindow, validity_window_problem
from memory_engine.errors import EmbeddingError, InvalidInput
from memory_engine.ports.embedder import Embedder
from memory_engine.ports.entries import EntityVectors, EntryChanges, EntryRepository, MemoryRepository
from memory_engine.services.write_batch import DeletedItem
from memory_engine.services.write_entry import embed_fact

logger = logging.getLogger(__name__)


def create_memory(memories: MemoryRepository, project_id: str, fields: MemoryFields) -> Memory:
    """Raises InvalidInput without a name, PayloadTooLarge for oversized metadata."""
    if fields.name is None:
        raise InvalidInput("name is required", details=[{"field": "name"}])
    check_metadata(fields.metadata)
    return memories.create(
        project_id, name=fields.name, description=fields.description, tags=fields.tags or [], metadata=fields.metadata,
        default_ttl=fields.default_ttl,
    )


def update_memory(memories: MemoryRepository, project_id: str, memory_id: str, fields: MemoryFields) -> Memory:
    """Replaces the fields sent. Raises NotFound, InvalidInput (``name: null``), PayloadTooLarge."""
    sent = fields.model_dump(include=fields.model_fields_set)
    if "name" in sent and sent["name"] is None:
        raise InvalidInput("name cannot be cleared", details=[{"field": "name"}])
    if "tags" in sent and sent["tags"] is None:
        sent["tags"] = []
    check_metadata(fields.metadata)
    if not sent:
        return memories.get(project_id, memory_id)
    return memories.update(project_id, memory_id, sent)


def list_memories(
    memories: MemoryRepository, project_id: str, *, tags: str | Sequence[str] | None = None,
    limit: int = DEFAULT_LIMIT, cursor: str | None = None,
) -> tuple[list[Memory], str | None]:
    """Newest first; ``tags`` are globs (``*``, ``?``), ORed. Raises InvalidInput for a bad cursor/patterns."""
    return memories.list(project_id, tag_globs=tag_filter(tags), limit=check_limit(limit), cursor=decode_cursor(cursor))


def list_entries(
    entries: EntryRepository, project_id: str, *, memory_id: str | None, include_invalidated: bool = False,
    limit: int = DEFAULT_LIMIT, cursor: str | None = None,
) -> tuple[list[MemoryEntry], str | None]:
    """Newest first; invalidated entries only with ``include_invalidated``. Raises NotFound, InvalidInput."""
    return entries.list(
        project_id, memory_id=memory_id, include_invalidated=include_invalidated, limit=check_limit(limit),
        cursor=decode_cursor(cursor),
    )


class EntryReplacement(ValidityWindow):
    """Body of ``PUT /v1/memory-entries/{id}``: the fields sent replace the stored ones outright
    (``tags: null`` or ``[]`` clears tags, ``metadata: null`` clears metadata). Changing
    ``content`` or ``entities`` re-embeds the entry. Provenance fields cannot be changed."""

    model_config = ConfigDict(extra="forbid")

    content: Text | None = None
    tags: Tags | None = None
    metadata: JsonObject | None = None
    subject: ShortText | None = None
    predicate: ShortText | None = None
    object: ShortText | None = None
    entities: list[EntityRef] | None = Field(None, max_length=20)
    confidence: Float | None = Field(None, ge=0.0, le=1.0)
    source_quote: Text | None = Field(None, max_length=MAX_QUOTE_CHARS)
    expires_at: Timestamp | None = None


def replace_entry(
    entries: EntryRepository, embedder: Embedder, project_id: str, entry_id: str, body: EntryReplacement
) -> MemoryEntry:
    """Replace fields of a live entry and re-embed it when its text changes (best-effort).

    Raises NotFound, Conflict (409) for an invalidated entry, InvalidInput (blank content,
    ``content: null``, ``confidence: null``), PayloadTooLarge (content or metadata).
    """
    sent = set(body.model_fields_set)
    for required in ("content", "confidence"):
        if required in sent and getattr(body, required) is None:
            raise InvalidInput(f"{required} cannot be null", details=[{"field": required}])
    fields: dict[str, Any] = {name: getattr(body, name) for name in sent if name != "entities"}
    if "content" in fields:
        fields["content"] = check_content(fields["content"])
    if "tags" in fields and fields["tags"] is None:
        fields["tags"] = []
    check_metadata(body.metadata)

    current = entries.get(project_id, entry_id)  # NotFound early, before any embedding work
    # the same window rule as a new entry, over the stored bound the request keeps
    window = validity_window_problem(fields.get("valid_from", current.valid_from),
                                     fields.get("valid_to", current.valid_to))
    if window:
        raise InvalidInput(window, details=[{"field": "valid_to" if "valid_to" in sent else "valid_from"}])
    reembed = bool({"content", "entities", "subject", "object"} & sent)
    links = None
    vectors: EntityVectors | None = None
    embedding = None
    if reembed:
        subject = fields.get("subject", current.subject)
        obj = fields.get("object", current.object)
        refs = body.entities if "entities" in sent else [EntityRef(name=e.name, type=e.type) for e in current.entities]
        links = entity_links(refs or [], subject=subject, object=obj)
        speaker = turn_speaker(subject, current.source_conversation_id, current.source_type)
        embedding, vectors, _ = embed_fact(embedder, fields.get("content", current.content), links, speaker=speaker)
    changes = EntryChanges(fields=fields, embedding=embedding, reembed=reembed, links=links, entity_vectors=vectors)
    done = entries.replace(project_id, entry_id, changes)
    embed_cleared(entries, embedder, project_id, done.cleared)
    return done.entry


def delete_entry(entries: EntryRepository, embedder: Embedder, project_id: str, entry_id: str) -> None:
    """Deletes the entry; a conversation turn's words leave the turns around it, and the vector of
    the turn after it, which read it, is embedded again (:func:`embed_cleared`). Raises NotFound."""
    embed_cleared(entries, embedder, project_id, entries.delete(project_id, entry_id).cleared)


def embed_cleared(entries: EntryRepository, embedder: Embedder, project_id: str, entry_ids: Sequence[str]) -> int:
    """Embeds the entries among ``entry_ids`` left without a vector by a deletion (the text
    ``memory-engine reembed`` embeds: the turn's line, not its neighbours); returns how many.
    Best-effort: when the model fails they stay without one (never with the deleted turn's
    words) until ``memory-engine reembed``, and the deletion stands."""
    texts = entries.uncovered(project_id, entry_ids) if entry_ids else []
    if not texts:
        return 0
    try:
        vectors = embedder.embed_documents([text for _, text in texts])
    except EmbeddingError as exc:
        logger.warning("%d entries left without a vector after a deletion (memory-engine reembed repairs them): %s",
                       len(texts), exc)
        return 0
    return entries.store_vectors(project_id, [(row_id, vector) for (row_id, _), vector in zip(texts, vectors, strict=True)])


def delete_entries(repo: EntryRepository, embedder: Embedder, project_id: str, entry_ids: Sequence[str]) -> list[DeletedItem]:
    """Deletes the project's entries among ``entry_ids`` (one transaction; a turn's words leave the
    turns around it, services.memories.delete_entry); another project's id, or one already gone,
    answers ``not_found`` (so retrying is safe)."""
    done = repo.delete_many(project_id, list(dict.fromkeys(entry_ids)))
    embed_cleared(repo, embedder, project_id, done.cleared)
    deleted = done.deleted
    seen: set[str] = set()
    out = []
    for index, entry_id in enumerate(entry_ids):
        first = entry_id not in seen
        seen.add(entry_id)
        out.append(DeletedItem(index=index, id=entry_id, action="deleted" if first and entry_id in deleted else "not_found"))
    return out
