"""Batch writes: up to 100 facts through the write funnel in one request, and batch deletes.

The funnel itself is unchanged: each item goes through :func:`write_entry`, in order, in its own
transaction, so duplicates *inside* the batch are skipped against each other exactly as two
requests would be (item 7 sees item 3 committed), and retrying a batch skips every item already
stored. What the batch adds is one embedding step ahead of the loop: every text the funnel will
embed (the fact with its anchor entity and conversation context, and the entity names) is
embedded in one ``embed_documents`` call, and the funnel is handed an embedder that answers from
those vectors. A text the prediction missed (it cannot, short of a concurrent write to the same
conversation) is embedded on its own, so the result never depends on the prediction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_engine.domain.entities import anchor_name, embedding_text, entity_links
from memory_engine.domain.entries import MemoryEntry, NewEntry, check_content, turn_text
from memory_engine.domain.validation import Text
from memory_engine.domain.write_decision import DEFAULT_DUPLICATE_THRESHOLD, WriteAction
from memory_engine.errors import EmbeddingError, MemoryEngineError, invalid_input
from memory_engine.ports.chat import ChatModel
from memory_engine.ports.embedder import Embedder, EmbeddingKind, Vector
from memory_engine.ports.entries import EntryRepository
from memory_engine.services.write_entry import write_entry

logger = logging.getLogger(__name__)

#: `POST /v1/memory-entries/batch` and its DELETE take at most this many items.
MAX_BATCH_ENTRIES = 100


class BatchEntry(NewEntry):
    """One item of a batch: a NewEntry, optionally with its own skip threshold."""

    duplicate_threshold: float | None = Field(None, ge=0.0, le=1.0)


class EntryBatch(BaseModel):
    """Body of ``POST /v1/memory-entries/batch``. Items are validated one by one (a bad item is
    ``rejected``, the others are written), so they are plain objects here."""

    model_config = ConfigDict(extra="forbid")

    entries: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_BATCH_ENTRIES, description=(
        "each a `POST /v1/memory-entries` body (`memory_id` may differ between items)"))
    duplicate_threshold: float = Field(DEFAULT_DUPLICATE_THRESHOLD, ge=0.0, le=1.0, description=(
        "for items that do not carry their own"))


class EntryBatchItem(BaseModel):
    """One item's outcome: the funnel's action and the entry (the existing one when ``skipped``),
    or ``rejected`` with the error (nothing was stored for it)."""

    index: int
    action: Literal["created", "updated", "skipped", "superseded", "rejected"]
    entry: MemoryEntry | None = None
    error: dict[str, Any] | None = None


class EntryIdBatch(BaseModel):
    """Body of ``DELETE /v1/memory-entries/batch``."""

    model_config = ConfigDict(extra="forbid")

    ids: list[Text] = Field(min_length=1, max_length=MAX_BATCH_ENTRIES)


class DeletedItem(BaseModel):
    index: int
    id: str
    action: Literal["deleted", "not_found"]


@dataclass(frozen=True)
class _Valid:
    index: int
    entry: NewEntry
    threshold: float


class PrefetchedEmbedder(Embedder):
    """Answers ``embed_documents`` from vectors computed ahead (one call for the whole batch);
    anything else goes to the real model. When the batch call failed, a text it should have
    covered fails at once (EmbeddingError: the funnel stores the fact without a vector) instead
    of calling a failing model once per item."""

    def __init__(self, inner: Embedder, vectors: dict[str, Vector], *, failed: bool = False) -> None:
        super().__init__(query_cache_size=0)
        self.dimensions = inner.dimensions
        self.model_id = inner.model_id
        self._inner = inner
        self._vectors = vectors
        self._failed = failed
        self.misses = 0

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if all(text in self._vectors for text in texts):
            return [self._vectors[text] for text in texts]
        if self._failed:
            raise EmbeddingError("the batch's embedding call failed")
        self.misses += 1
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        return self._inner.embed_query(text)

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        raise NotImplementedError  # every call is answered above or by the inner model


def write_entries(
    repo: EntryRepository, embedder: Embedder, chat: ChatModel, *, project_id: str, items: Sequence[dict[str, Any]],
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
) -> list[EntryBatchItem]:
    """Each item through the write funnel, in order (the manual path: no merge or supersede).

    An item that fails validation, names a memory not in the project (404) or is over a limit
    (413) is ``rejected`` with the error and does not stop the others. The writes share one
    transaction, so a dependency failure (database) stores none of them and sending the batch
    again is safe; a retry after success answers ``skipped`` for each item. Embedding is one
    batched, best-effort model call.
    """
    results: dict[int, EntryBatchItem] = {}
    valid: list[_Valid] = []
    for index, raw in enumerate(items):
        try:
            body = BatchEntry.model_validate(raw)
        except ValidationError as error:
            results[index] = _rejected(index, invalid_input(error, "invalid memory entry"))
            continue
        threshold = body.duplicate_threshold if body.duplicate_threshold is not None else duplicate_threshold
        valid.append(_Valid(index, NewEntry.model_validate(body.model_dump(exclude={"duplicate_threshold"})), threshold))

    prefetched = _prefetch(repo, embedder, project_id, valid)
    # one transaction (one commit) for the whole batch: measured, the commit's disk flush is most
    # of a single write's time on the local engine (bench/write_funnel.py --batch)
    with repo.one_transaction(project_id, [item.entry.memory_id for item in valid]) as batch:
        for item in valid:
            try:
                result = write_entry(batch, prefetched, chat, project_id=project_id, entry=item.entry,
                                     duplicate_threshold=item.threshold, agent=None)
            except MemoryEngineError as error:
                if error.status >= 500:
                    raise
                results[item.index] = _rejected(item.index, error)
                continue
            action: WriteAction = result.action
            results[item.index] = EntryBatchItem(index=item.index, action=action, entry=result.entry)
    if prefetched.misses:
        logger.info("batch write: %d item(s) embedded outside the batched call", prefetched.misses)
    return [results[i] for i in range(len(items))]


def _rejected(index: int, error: MemoryEngineError) -> EntryBatchItem:
    return EntryBatchItem(index=index, action="rejected", error=error.to_body()["error"])


def _prefetch(repo: EntryRepository, embedder: Embedder, project_id: str, valid: Sequence[_Valid]) -> PrefetchedEmbedder:
    """The texts the funnel will embed for each item, embedded in one call. A conversation's turn
    is embedded with the turn before it as context (see ``write_entry``): the batch's own previous
    item of that conversation, else the memory's latest live entry of it."""
    texts: list[str] = []
    last_turn: dict[tuple[str, str], str] = {}
    for item in valid:
        entry = item.entry
        try:
            content = check_content(entry.content)
        except MemoryEngineError:
            continue  # the funnel rejects it
        links = entity_links(entry.entities, subject=entry.subject, object=entry.object)
        context: str | None = None
        if entry.context is not None:
            context = entry.context.strip() or None
        elif entry.source_conversation_id is not None and entry.source_type != "extraction":
            key = (entry.memory_id, entry.source_conversation_id)
            if key in last_turn:
                context = last_turn[key]
            else:
                try:
                    previous = repo.conversation_context(project_id, entry.memory_id, entry.source_conversation_id)
                except MemoryEngineError:
                    previous = None
                context = previous[1] if previous else None
            last_turn[key] = turn_text(entry.subject, content)
        texts.append(embedding_text(content, anchor_name(links), context=context))
        texts.extend(link.display_name for link in links)
    unique = list(dict.fromkeys(texts))
    if not unique:
        return PrefetchedEmbedder(embedder, {})
    try:
        vectors = embedder.embed_documents(unique)
    except Exception as exc:  # best-effort, as in the funnel: the facts are stored without vectors
        logger.warning("batch embedding failed; storing without vectors (repair with `memory-engine reembed`): %s", exc)
        return PrefetchedEmbedder(embedder, {}, failed=True)
    return PrefetchedEmbedder(embedder, dict(zip(unique, vectors, strict=True)))


def delete_entries(repo: EntryRepository, project_id: str, entry_ids: Sequence[str]) -> list[DeletedItem]:
    """Deletes the project's entries among ``entry_ids`` (one statement); another project's id,
    or one already gone, answers ``not_found`` (so retrying is safe)."""
    deleted = repo.delete_many(project_id, list(dict.fromkeys(entry_ids)))
    seen: set[str] = set()
    out = []
    for index, entry_id in enumerate(entry_ids):
        first = entry_id not in seen
        seen.add(entry_id)
        out.append(DeletedItem(index=index, id=entry_id, action="deleted" if first and entry_id in deleted else "not_found"))
    return out
