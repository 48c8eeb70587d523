"""Batch writes: up to 100 facts through the write funnel in one request, and batch deletes.

Each item is decided as its single write would decide it, in order, so duplicates *inside* the
batch are skipped against each other exactly as two requests would be (item 7 sees item 3), and
retrying a batch skips every item already stored. What the batch adds:

- one transaction for all items (the memories checked and locked once);
- the embedding done ahead in a few batched model calls on background threads, overlapped with
  the writes: every text the funnel will embed (the fact with its anchor entity and conversation
  context, and the entity names) is planned up front, and the funnel is handed an embedder that
  answers from those vectors (a text the plan missed is embedded on its own, so the result never
  depends on the plan);
- the funnel's database work set-based, a slice of facts at a time (:class:`_Together`): their
  shortlists in one round trip, the decisions in memory (the same ``decide`` on the same best
  candidate), their inserts in a second round trip, each statement the funnel's own. Items whose
  decision reads or writes more than that (a conversation turn, an entry with its own expiry, a
  fact without a vector, a memory the batch may not write) go through :func:`write_entry` itself,
  between the slices."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_engine.domain.entities import EMBED_WINDOW_CHARS, entity_links, fact_texts
from memory_engine.domain.entries import MemoryEntry, NewEntry, check_content, is_turn, turn_speaker, turn_text
from memory_engine.domain.validation import Float, Text
from memory_engine.domain.write_decision import (
    DEFAULT_DUPLICATE_THRESHOLD,
    SHORTLIST_SIZE,
    Decision,
    WriteAction,
    decide,
    read_whole,
)
from memory_engine.errors import EmbeddingError, MemoryEngineError, invalid_input
from memory_engine.ids import ENTRY, new_id
from memory_engine.ports.chat import ChatModel
from memory_engine.ports.embedder import Embedder, EmbeddingKind, Vector
from memory_engine.ports.entries import EntryBatchTransaction, EntryInsert, EntryRead, EntryRepository, ShortlistRequest
from memory_engine.services.write_entry import PreparedFact, WriteResult, prepare_fact, valid_threshold, write_entry

logger = logging.getLogger(__name__)

#: `POST /v1/memory-entries/batch` and its DELETE take at most this many items.
MAX_BATCH_ENTRIES = 100
#: Items per embedding slice (see PrefetchedEmbedder): the first slice, then the others.
_FIRST_SLICE, _SLICE = 8, 16
_EMBED_THREADS = 2


class BatchEntry(NewEntry):
    """One item of a batch: a NewEntry, optionally with its own skip threshold."""

    duplicate_threshold: Float | None = Field(None, ge=0.0, le=1.0)


class EntryBatch(BaseModel):
    """Body of ``POST /v1/memory-entries/batch``. Items are validated one by one (a bad item is
    ``rejected``, the others are written), so they are plain objects here."""

    model_config = ConfigDict(extra="forbid")

    entries: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_BATCH_ENTRIES, description=(
        "each a `POST /v1/memory-entries` body (`memory_id` may differ between items)"))
    duplicate_threshold: Float = Field(DEFAULT_DUPLICATE_THRESHOLD, ge=0.0, le=1.0, description=(
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
    """Answers ``embed_documents`` from vectors computed ahead: the batch's texts are embedded in
    a background thread, a slice of items at a time in input order, while the funnel writes the
    items whose vectors are ready (the model and the database work at the same time). A text the
    plan did not cover goes to the real model; a text whose slice failed fails at once
    (EmbeddingError: the funnel stores the fact without a vector) instead of calling a failing
    model once per item."""

    def __init__(self, inner: Embedder, slices: Sequence[Sequence[str]] = ()) -> None:
        super().__init__(query_cache_size=0)
        self.dimensions = inner.dimensions
        self.model_id = inner.model_id
        self._inner = inner
        self._pending: dict[str, Future[dict[str, Vector]]] = {}
        self._vectors: dict[str, Vector] = {}
        self._failed: set[str] = set()
        self.misses = 0
        if slices:
            pool = ThreadPoolExecutor(max_workers=_EMBED_THREADS, thread_name_prefix="batch-embed")
            for texts in slices:
                future = pool.submit(_embed_slice, inner, texts)
                self._pending.update(dict.fromkeys(texts, future))
            pool.shutdown(wait=False)  # the thread ends after the last slice

    def cancel(self) -> None:
        """Drop the slices not started (the batch ended early, e.g. on a database error)."""
        for future in self._pending.values():
            future.cancel()

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        for text in texts:
            future = self._pending.pop(text, None)
            if future is not None:
                try:
                    self._vectors.update(future.result())
                except Exception as exc:  # best-effort, as in the funnel: stored without vectors
                    logger.warning("batch embedding failed; storing without vectors (repair with"
                                   " `memory-engine reembed`): %s", exc)
                    same = [t for t, f in self._pending.items() if f is future]
                    for t in same:
                        del self._pending[t]
                    self._failed.update([text, *same])
        if all(text in self._vectors for text in texts):
            return [self._vectors[text] for text in texts]
        if any(text in self._failed for text in texts):
            raise EmbeddingError("the batch's embedding call failed")
        self.misses += 1
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        return self._inner.embed_query(text)

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        raise NotImplementedError  # every call is answered above or by the inner model


def _embed_slice(embedder: Embedder, texts: Sequence[str]) -> dict[str, Vector]:
    return dict(zip(texts, embedder.embed_documents(texts), strict=True))


def write_entries(
    repo: EntryRepository, embedder: Embedder, chat: ChatModel, *, project_id: str, items: Sequence[dict[str, Any]],
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
) -> list[EntryBatchItem]:
    """Each item through the write funnel, in order (the manual path: no merge or supersede).

    An item that fails validation, names a memory not in the project (404) or is over a limit
    (413) is ``rejected`` with the error and does not stop the others. The writes share one
    transaction, so a dependency failure (database) stores none of them and sending the batch
    again is safe; a retry after success answers ``skipped`` for each item. Embedding is batched,
    overlapped with the writes and best-effort (a fact whose vector failed is stored without one).
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

    prefetched, slice_ends = _prefetch(repo, embedder, project_id, valid)
    # one transaction (one commit) for the whole batch: measured, the commit's disk flush is most
    # of a single write's time on the local engine (bench/write_funnel.py --batch)
    with contextlib.ExitStack() as stack:
        stack.callback(prefetched.cancel)
        batch = stack.enter_context(repo.one_transaction(project_id, [item.entry.memory_id for item in valid]))
        together = _Together(batch, results)

        def through_funnel(item: _Valid) -> None:
            """The item written by :func:`write_entry` itself, after the facts pending before it."""
            together.write()
            result = write_entry(batch, prefetched, chat, project_id=project_id, entry=item.entry,
                                 duplicate_threshold=item.threshold, agent=None)
            together.written_by_funnel(result)
            results[item.index] = EntryBatchItem(index=item.index, action=result.action, entry=result.entry)

        for position, item in enumerate(valid):
            try:
                if _needs_funnel(batch, item.entry):
                    through_funnel(item)
                else:
                    valid_threshold(item.threshold)
                    # the caller's context, as the funnel takes it (a turn, which reads its own, is not here)
                    context = (item.entry.context.strip() or None) if item.entry.context is not None else None
                    fact = prepare_fact(prefetched, item.entry, context)
                    if fact.embedding is None or fact.own_embedding is not None or len(fact.content) > EMBED_WINDOW_CHARS:
                        # the funnel's no-vector path (an exact-content lookup), a fact whose vector read a
                        # context (its decision reads its own vector too) or one longer than its vector reads
                        through_funnel(item)
                    else:
                        together.pending.append(_Fast(item, fact, fact.embedding))
            except MemoryEngineError as error:
                if error.status >= 500:
                    raise
                results[item.index] = _rejected(item.index, error)
            if position + 1 in slice_ends:  # this slice's vectors are in: write its facts
                together.write()
        together.write()
    if prefetched.misses:
        logger.info("batch write: %d item(s) embedded outside the batched call", prefetched.misses)
    return [results[i] for i in range(len(items))]


@dataclass(frozen=True)
class _Fast:
    """An item the batch writes set-based: a vector, no conversation chaining, no own expiry."""

    item: _Valid
    fact: PreparedFact
    embedding: Vector


def _needs_funnel(batch: EntryBatchTransaction, entry: NewEntry) -> bool:
    """Items written one at a time through :func:`write_entry`: a turn of a conversation (its
    context is read from, and appended to, the turn before it), an entry with its own
    ``expires_at`` (it may be expired already, so not a candidate for the facts after it) and one
    naming a memory the batch may not write (the funnel's own 404)."""
    turn = entry.context is None and is_turn(entry.source_conversation_id, entry.source_type)
    return turn or entry.expires_at is not None or not batch.writable(entry.memory_id)


class _Together:
    """Writes the batch's plain facts (see :func:`_needs_funnel`) a slice at a time, deciding each
    as the funnel would, one after the other, in two round trips a slice: (1) the shortlist of
    each fact whose memory held live entries when the batch began (the funnel's own query, which
    sees everything written so far) and the similarity of each fact to the facts of its memory
    created before it in this batch, with the shortlist's own operator; (2) in order, the insert of
    each fact created and, for each fact skipped, a read of the entry it duplicates at its place
    (what a single write would have answered then). A fact's best candidate is ranked as the
    funnel's shortlist ranks it: by similarity, the oldest exact content match first among equals
    (a stored one before the batch's own)."""

    def __init__(self, batch: EntryBatchTransaction, results: dict[int, EntryBatchItem]) -> None:
        self._batch = batch
        self._results = results
        self.pending: list[_Fast] = []
        self._written: list[str] = []  # ids of the facts created so far, in order
        self._first_with: dict[tuple[str, str], str] = {}  # (memory, content) -> the first created
        self._shortlisted: set[str] = set()  # memories whose facts run the shortlist query

    def written_by_funnel(self, result: WriteResult) -> None:
        """An item went through :func:`write_entry`: from now on its memory's facts run the
        shortlist query, which sees that entry as the funnel would (its own expiry, its vector)."""
        if result.action == "created":
            self._shortlisted.add(result.entry.memory_id)

    def write(self) -> None:
        if not self.pending:
            return
        facts, self.pending = self.pending, []
        batch = self._batch
        compared = batch.shortlists(
            [ShortlistRequest(f.item.entry.memory_id, f.embedding, f.fact.content,
                              stored=f.item.entry.memory_id in self._shortlisted or batch.held_entries(f.item.entry.memory_id))
             for f in facts],
            SHORTLIST_SIZE, written=self._written)
        ids_ = [new_id(ENTRY) for _ in facts]
        steps: list[EntryInsert | EntryRead] = []
        actions: list[WriteAction] = []
        created: list[int] = []
        for j, fact in enumerate(facts):
            memory_id, content = fact.item.entry.memory_id, fact.fact.content
            stored = compared.candidates[j][0] if compared.candidates[j] else None
            similarity = stored.similarity if stored is not None else None
            best_id = stored.entry.id if stored is not None else None
            # a stored entry longer than its vector reads is a duplicate only as the same text (the
            # batch's own facts here are within the window: longer ones go through the funnel)
            whole = stored is None or read_whole(content, stored.entry.content)
            if not (stored is not None and stored.similarity == 1.0 and stored.entry.content == content):
                same = self._first_with.get((memory_id, content))
                if same is not None:
                    similarity, best_id, whole = 1.0, same, True
                else:
                    for earlier in self._written:
                        pair = compared.to_written.get((earlier, j))
                        if pair is not None and (similarity is None or pair > similarity):
                            similarity, best_id, whole = pair, earlier, True
                    for i in created:
                        pair = compared.among.get((i, j))
                        if pair is not None and (similarity is None or pair > similarity):
                            similarity, best_id, whole = pair, ids_[i], True
            if decide(similarity, duplicate_threshold=fact.item.threshold, agent=False, whole=whole) is Decision.SKIP:
                assert best_id is not None
                actions.append("skipped")
                steps.append(EntryRead(memory_id, best_id))
            else:
                actions.append("created")
                created.append(j)
                self._first_with.setdefault((memory_id, content), ids_[j])
                steps.append(EntryInsert(memory_id, fact.item.entry, content=content, embedding=fact.embedding,
                                         links=fact.fact.links, entity_vectors=fact.fact.entity_vectors,
                                         context=fact.fact.context, entry_id=ids_[j]))
        self._written.extend(ids_[i] for i in created)
        for fact, action, entry in zip(facts, actions, batch.write_in_order(steps), strict=True):
            assert entry is not None  # a duplicate found in this transaction is live: nothing here invalidates
            self._results[fact.item.index] = EntryBatchItem(index=fact.item.index, action=action, entry=entry)


def _rejected(index: int, error: MemoryEngineError) -> EntryBatchItem:
    return EntryBatchItem(index=index, action="rejected", error=error.to_body()["error"])


def _prefetch(
    repo: EntryRepository, embedder: Embedder, project_id: str, valid: Sequence[_Valid]
) -> tuple[PrefetchedEmbedder, set[int]]:
    """The texts the funnel will embed for each item, embedded ahead in a few batched calls. A
    conversation's turn is embedded with the turn before it as context (see ``write_entry``): the
    batch's own previous item of that conversation, else the memory's latest live entry of it."""
    per_item: list[list[str]] = []
    positions: list[int] = []  # the place in ``valid`` of each item of ``per_item``
    last_turn: dict[tuple[str, str], str] = {}
    for position, item in enumerate(valid):
        entry = item.entry
        try:
            content = check_content(entry.content)
        except MemoryEngineError:
            continue  # the funnel rejects it
        links = entity_links(entry.entities, subject=entry.subject, object=entry.object)
        context: str | None = None
        if entry.context is not None:
            context = entry.context.strip() or None
        elif is_turn(entry.source_conversation_id, entry.source_type):
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
        speaker = turn_speaker(entry.subject, entry.source_conversation_id, entry.source_type)
        per_item.append(fact_texts(content, links, context=context, speaker=speaker))
        positions.append(position)
    # slices of items in input order: the first is small so writing starts early, the rest large
    # enough for the model to batch well (texts a slice repeats from an earlier one are not redone)
    slices: list[list[str]] = []
    ends: set[int] = set()  # how many items of ``valid`` are covered once a slice is embedded
    seen: set[str] = set()
    bounds = [0, _FIRST_SLICE, *range(_FIRST_SLICE + _SLICE, len(per_item), _SLICE), len(per_item)]
    for lo, hi in itertools.pairwise(bounds):
        texts = [t for item_texts in per_item[lo:hi] for t in item_texts if t not in seen]
        texts = list(dict.fromkeys(texts))
        seen.update(texts)
        if texts:
            slices.append(texts)
        if min(hi, len(per_item)) > lo:
            ends.add(positions[min(hi, len(per_item)) - 1] + 1)
    return PrefetchedEmbedder(embedder, slices), ends
