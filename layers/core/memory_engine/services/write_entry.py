"""The write funnel: the one function every write path calls (REST now, extraction later).

    embed (best-effort) -> lock the memory -> shortlist live entries -> decide
      >= duplicate_threshold              -> skipped (existing entry returned)
      >= 0.75 and an agent context        -> ask the chat model: merge (updated) | supersede | distinct (created)
      otherwise                           -> created

A fact whose vector read a context (a conversation's turn reads the turn before it) is compared on
its own vector too, and an entry's similarity is the lower of the two readings
(``EntryWriteSession.shortlist(own=)``): a short turn after a long answer is mostly the answer in
its first vector, and is no duplicate of it. Nor is a fact longer than the model reads of a text a
duplicate of another that opens alike (``read_whole``): beyond the window only the same text is.

Locking and the model call: the chat model is called *outside* the memory's write lock. The
first transaction (lock, shortlist, decide) ends before the call; a second transaction re-takes
the lock, re-runs the shortlist and applies the verdict only if the same candidate is still the
best live match and unchanged (same ``updated_at``). If anything moved meanwhile, the write
re-decides without the model: skip if a duplicate appeared, else create. So a slow model never
blocks other writes to the memory, and a stale verdict is never applied. Model failure, timeout,
blank or unparsable answer -> created. Nothing is ever appended to an entry.

An agent context with no chat model configured (``ChatModel.available`` false) writes as a manual
write would; the result says so in ``degraded``, as it does when the model call fails.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from memory_engine.domain.entities import NewEntityLink, anchor_name, embedding_text, entity_links, fact_texts, keeps_own_vector
from memory_engine.domain.entries import (
    EntryWriteResult,
    MemoryEntry,
    NewEntry,
    check_content,
    check_metadata,
    is_turn,
    turn_speaker,
    turn_text,
)
from memory_engine.domain.write_decision import (
    ARBITRATION_SYSTEM_PROMPT,
    DEFAULT_DUPLICATE_THRESHOLD,
    SHORTLIST_SIZE,
    AgentContext,
    Arbitration,
    Decision,
    WriteAction,
    arbitration_user_message,
    check_threshold,
    decide,
    merge_metadata,
    parse_arbitration,
    read_whole,
    union_tags,
)
from memory_engine.errors import ChatModelError, EmbeddingError, InvalidInput
from memory_engine.ports.chat import ChatMessage, ChatModel
from memory_engine.ports.embedder import Embedder, Vector
from memory_engine.ports.entries import Candidate, EntityVectors, EntryRepository, EntryWriteSession

logger = logging.getLogger(__name__)


#: ``WriteResult.degraded`` notes (the wire shape says them as they are).
MERGE_NO_MODEL = "merge: no chat model configured; written as a manual write (similar facts are not merged)"
MERGE_MODEL_FAILED = "merge: the chat model did not answer usably; the fact was created"


@dataclass(frozen=True)
class WriteResult:
    action: WriteAction
    entry: MemoryEntry
    superseded_entry_id: str | None = None
    #: Why an agent write could not merge or supersede (see MERGE_NO_MODEL, MERGE_MODEL_FAILED).
    degraded: tuple[str, ...] = ()

    def reply(self) -> EntryWriteResult:
        """The funnel's answer as every face gives it (``POST /v1/memory-entries``, MCP ``write_memory``)."""
        return EntryWriteResult(**self.entry.model_dump(), action=self.action,
                                superseded_entry_id=self.superseded_entry_id, degraded=list(self.degraded) or None)


@dataclass(frozen=True)
class PreparedFact:
    entry: NewEntry
    content: str
    links: list[NewEntityLink]
    embedding: Vector | None
    entity_vectors: EntityVectors
    context: str | None = None
    previous_id: str | None = None
    #: the fact's own vector when ``embedding`` read its ``context`` too (:func:`embed_fact`): the
    #: funnel decides on both, and the entry stores it when ``keeps_own`` (the context was cut to fit)
    own_embedding: Vector | None = None
    keeps_own: bool = False

    @property
    def stored_own_embedding(self) -> Vector | None:
        """The second vector the entry stores (:func:`memory_engine.domain.entities.keeps_own_vector`)."""
        return self.own_embedding if self.keeps_own else None


def write_entry(
    repo: EntryRepository,
    embedder: Embedder,
    chat: ChatModel,
    *,
    project_id: str,
    entry: NewEntry,
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
    agent: AgentContext | None = None,
) -> WriteResult:
    """Write one fact through the funnel and say what happened.

    Raises InvalidInput (422) for blank content or a threshold outside 0..1, PayloadTooLarge (413)
    for oversized content or metadata, NotFound (404) when the memory is not in the project.
    Embedding and chat-model failures never fail the write.
    """
    valid_threshold(duplicate_threshold)
    degraded: tuple[str, ...] = ()
    if agent is not None and not chat.available:
        agent, degraded = None, (MERGE_NO_MODEL,)
    context, previous_id = _context(repo, project_id, entry)
    prepared = prepare_fact(embedder, entry, context, previous_id)

    with repo.write_session(project_id, entry.memory_id) as session:
        best = _best(session, prepared)
        decision = _decide(best, prepared, duplicate_threshold, agent)
        if decision is Decision.SKIP and best is not None:
            return WriteResult("skipped", best.entry, degraded=degraded)
        if decision is Decision.CREATE:
            return WriteResult("created", _insert(session, prepared), degraded=degraded)
    assert best is not None and agent is not None

    verdict = _arbitrate(chat, agent, existing=best.entry.content, new=prepared.content)
    if verdict is None:
        degraded = (MERGE_MODEL_FAILED,)
    merged_embedding = _embed_merge(embedder, verdict, best.entry, prepared)

    with repo.write_session(project_id, entry.memory_id) as session:
        now_best = _best(session, prepared)
        if now_best is not None and _decide(now_best, prepared, duplicate_threshold, None) is Decision.SKIP:
            return WriteResult("skipped", now_best.entry)
        still_same = (
            now_best is not None
            and now_best.entry.id == best.entry.id
            and now_best.entry.updated_at == best.entry.updated_at
        )
        if verdict is None or verdict.verdict == "distinct" or not still_same:
            return WriteResult("created", _insert(session, prepared), degraded=degraded)
        if verdict.verdict == "merge":
            return WriteResult("updated", _merge(session, best.entry, prepared, verdict, merged_embedding))
        created = _insert(session, prepared)
        session.invalidate(
            best.entry.id, superseded_by=created.id, reason=verdict.reason or "contradicted by a newer fact"
        )
        return WriteResult("superseded", created, superseded_entry_id=best.entry.id)


def valid_threshold(duplicate_threshold: float) -> float:
    """Raises InvalidInput (422) for a threshold outside 0..1."""
    try:
        return check_threshold(duplicate_threshold)
    except ValueError as exc:
        raise InvalidInput(str(exc), details=[{"field": "duplicate_threshold"}]) from exc


def _context(repo: EntryRepository, project_id: str, entry: NewEntry) -> tuple[str | None, str | None]:
    """``(context, previous entry id)``: the caller's context, else (a turn of a conversation,
    not an extracted fact, which is written self-contained) the conversation's previous live entry
    in the memory, whose own context then gains this turn (it follows it)."""
    if entry.context is not None:
        return entry.context.strip() or None, None
    if not is_turn(entry.source_conversation_id, entry.source_type):
        return None, None
    previous = repo.conversation_context(project_id, entry.memory_id, entry.source_conversation_id)
    return (previous[1], previous[0]) if previous else (None, None)


def prepare_fact(embedder: Embedder, entry: NewEntry, context: str | None = None, previous_id: str | None = None) -> PreparedFact:
    """The fact checked (InvalidInput 422 when blank, PayloadTooLarge 413 over a limit) and embedded (best-effort)."""
    content = check_content(entry.content)
    check_metadata(entry.metadata)
    links = entity_links(entry.entities, subject=entry.subject, object=entry.object)
    speaker = turn_speaker(entry.subject, entry.source_conversation_id, entry.source_type)
    embedding, entity_vectors, own = embed_fact(embedder, content, links, context=context, speaker=speaker)
    keeps = keeps_own_vector(content, anchor_name(links), context=context, speaker=speaker)
    return PreparedFact(entry=entry, content=content, links=links, embedding=embedding, entity_vectors=entity_vectors,
                        context=context, previous_id=previous_id, own_embedding=own, keeps_own=keeps)


def embed_fact(
    embedder: Embedder, content: str, links: list[NewEntityLink], *, context: str | None = None,
    speaker: str | None = None,
) -> tuple[Vector | None, EntityVectors, Vector | None]:
    """The fact's vector, its entities' and, when the first read a ``context``, the fact's own
    (:func:`memory_engine.domain.entities.fact_texts`; else None), best-effort: ``None`` where the
    model failed."""
    texts = fact_texts(content, links, context=context, speaker=speaker)
    vectors = embed_best_effort(embedder, texts)
    named = vectors[1:1 + len(links)]
    own = vectors[1 + len(links)] if len(texts) > 1 + len(links) else None
    return vectors[0], EntityVectors({link.key: vec for link, vec in zip(links, named, strict=True)}), own


def embed_best_effort(embedder: Embedder, texts: list[str]) -> list[Vector | None]:
    """Vectors for ``texts``, or ``None`` for each when the model fails (the write still succeeds)."""
    try:
        return list(embedder.embed_documents(texts))
    except EmbeddingError as exc:
        logger.warning("embedding failed; storing without a vector (repair with `memory-engine reembed`): %s", exc)
    except Exception:  # a broken adapter must not lose a fact either
        logger.exception("embedding raised unexpectedly; storing without a vector")
    return [None] * len(texts)


def _best(session: EntryWriteSession, prepared: PreparedFact) -> Candidate | None:
    if prepared.embedding is None:
        # no vector: an identical live fact is still a duplicate
        same = session.find_live_by_content(prepared.content)
        return Candidate(same, 1.0) if same is not None else None
    shortlist = session.shortlist(prepared.embedding, SHORTLIST_SIZE, content=prepared.content,
                                  own=prepared.own_embedding)
    return shortlist[0] if shortlist else None


def _decide(best: Candidate | None, prepared: PreparedFact, duplicate_threshold: float,
            agent: AgentContext | None) -> Decision:
    return decide(best.similarity if best else None, duplicate_threshold=duplicate_threshold, agent=agent is not None,
                  whole=best is None or read_whole(prepared.content, best.entry.content))


def _insert(session: EntryWriteSession, prepared: PreparedFact) -> MemoryEntry:
    created = session.insert(
        prepared.entry, content=prepared.content, embedding=prepared.embedding, links=prepared.links,
        entity_vectors=prepared.entity_vectors, context=prepared.context, own_embedding=prepared.stored_own_embedding,
    )
    if prepared.previous_id is not None:
        session.extend_context(prepared.previous_id, turn_text(prepared.entry.subject, prepared.content))
    return created


def _arbitrate(chat: ChatModel, agent: AgentContext, *, existing: str, new: str) -> Arbitration | None:
    """The model's verdict, or ``None`` (create) on any failure."""
    try:
        reply = chat.complete(
            [ChatMessage("user", arbitration_user_message(existing, new))],
            system=ARBITRATION_SYSTEM_PROMPT,
            model=agent.model,
            max_tokens=400,
            timeout=agent.timeout,
        )
    except ChatModelError as exc:
        logger.info("merge arbitration unavailable (%s); creating", exc.code)
        return None
    except Exception:
        logger.exception("chat model raised unexpectedly during merge arbitration; creating")
        return None
    verdict = parse_arbitration(reply)
    if verdict is None:
        logger.info("merge arbitration answer unusable; creating")
    return verdict


def _embed_merge(embedder: Embedder, verdict: Arbitration | None, existing: MemoryEntry, prepared: PreparedFact) -> Vector | None:
    if verdict is None or verdict.verdict != "merge" or verdict.content is None:
        return None
    anchor = anchor_name(prepared.links) or anchor_name(existing.entities)
    return embed_best_effort(embedder, [embedding_text(verdict.content, anchor)])[0]


def _merge(
    session: EntryWriteSession, existing: MemoryEntry, prepared: PreparedFact, verdict: Arbitration, embedding: Vector | None
) -> MemoryEntry:
    new = prepared.entry
    fields: dict[str, Any] = {
        "tags": union_tags(existing.tags, new.tags),
        "metadata": merge_metadata(existing.metadata, new.metadata),
        # the new fact wins where it says something; provenance (source_*) is never rewritten
        "subject": new.subject or existing.subject,
        "predicate": new.predicate or existing.predicate,
        "object": new.object or existing.object,
        "confidence": new.confidence,
        "valid_from": new.valid_from or existing.valid_from,
        "valid_to": new.valid_to or existing.valid_to,
    }
    assert verdict.content is not None
    return session.merge_into(
        existing.id, content=verdict.content, embedding=embedding, fields=fields, links=prepared.links,
        entity_vectors=prepared.entity_vectors,
    )
