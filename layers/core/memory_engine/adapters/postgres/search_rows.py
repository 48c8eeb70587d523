"""A search's result rows as the API's models (the columns of ``search_sql.SearchTable.row_columns``), and
the read of a ranking's first rows (:func:`page_rows`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from memory_engine.adapters.postgres import search_documents, search_episodes, search_memories
from memory_engine.adapters.postgres.database import Row
from memory_engine.adapters.postgres.search_restatements import restatements
from memory_engine.domain.entries import USER, normalize_entity_name, speaker_of
from memory_engine.domain.search_config import Signal
from memory_engine.domain.search_models import (
    AnyResult,
    Candidate,
    DocumentResult,
    EntityLink,
    EpisodeResult,
    EpisodeSearchResult,
    MemoryResult,
    RankedLists,
    ResultKey,
    SourceType,
)
from memory_engine.domain.search_plan import SearchPlan
from memory_engine.domain.supersession import MIN_SIMILARITY, Restatement


def _float(value: Any) -> float | None:
    return None if value is None else round(float(value), 6)


def similarity(row: Row) -> float | None:
    """A row's ``similarity`` column as a result shows it (6 decimals; None without a vector)."""
    return _float(row["similarity"])


def memory_result(row: Row, *, raw: bool) -> MemoryResult:
    extra = None
    if raw:
        extra = {
            "subject": row["subject"], "predicate": row["predicate"], "object": row["object"],
            "confidence": float(row["confidence"]), "source_quote": row["source_quote"],
            "source_type": row["source_type"], "updated_at": row["updated_at"], "invalidated_at": row["invalidated_at"],
        }
    return MemoryResult(
        id=row["id"], content=row["content"], score=0.0, similarity_score=_float(row["similarity"]),
        memory_id=row["memory_id"], memory_name=row["memory_name"], tags=list(row["tags"] or []),
        metadata=row["metadata"], entities=[EntityLink(**link) for link in row["entities"]],
        valid_from=row["valid_from"], valid_to=row["valid_to"], created_at=row["created_at"],
        source_conversation_id=row["source_conversation_id"], source_generation_id=row["source_generation_id"],
        source_event_id=row["source_event_id"], raw=extra,
    )


def document_result(row: Row) -> DocumentResult:
    return DocumentResult(
        id=row["id"], content=row["content"], score=0.0, similarity_score=_float(row["similarity"]),
        document_id=row["document_id"], path=row["path"], title=row["title"], page=row["page"],
        chunk_index=row["chunk_index"], tags=list(row["tags"] or []), metadata=row["metadata"],
    )


def episode_result(row: Row) -> EpisodeSearchResult:
    return EpisodeSearchResult(
        id=row["id"], content=row["content"], score=0.0, similarity_score=_float(row["similarity"]),
        memory_id=row["memory_id"], conversation_id=row["conversation_id"], turn_id=row["turn_id"], role=row["role"],
        occurred_at=row["occurred_at"], created_at=row["created_at"], metadata=row["metadata"],
    )


def listed_episode(row: Row) -> EpisodeResult:
    """An episode of the deprecated ``episodes`` list (``search_episodes.first_window_rows``)."""
    return EpisodeResult(
        id=row["id"], memory_id=row["memory_id"], conversation_id=row["conversation_id"], turn_id=row["turn_id"],
        occurred_at=row["occurred_at"], transcript=row["transcript"], similarity_score=similarity(row),
    )


@dataclass(frozen=True)
class Page:
    """A source's rows of the ranking's first keys, as the page shows them, and the pairs of them
    that state the same thing (facts, when the plan reads them)."""

    rows: dict[ResultKey, AnyResult]
    restated: list[Restatement] = field(default_factory=list)


def page_rows(conn: psycopg.Connection[Any], *, source: SourceType, project_id: str, ids: list[str],
               plan: SearchPlan) -> Page:
    """The result rows of ``source``'s ``ids`` (of a ranking's first), shaped as the page shows them;
    for facts, with :attr:`SearchPlan.reads_restatements`, the pairs of them that state the same
    thing (a column of the same statement: their vectors are compared where they are)."""
    embedding = plan.query.embedding
    if source == search_memories.SOURCE:
        restated_at = MIN_SIMILARITY if plan.reads_restatements and len(ids) > 1 else None
        facts = search_memories.rows(conn, project_id, ids, embedding, restated_at=restated_at)
        shown: dict[ResultKey, AnyResult] = {(source, row["id"]): memory_result(row, raw=plan.raw) for row in facts}
        return Page(shown, restatements(source, facts) if restated_at is not None else [])
    if source == search_documents.SOURCE:
        chunks = search_documents.rows(conn, project_id, ids, embedding)
        return Page({(source, row["id"]): document_result(row) for row in chunks})
    turns = search_episodes.rows(conn, project_id, ids, embedding, plan.query.text)
    return Page({(source, row["id"]): episode_result(row) for row in turns})


def subjects(row: Row) -> tuple[str, ...]:
    """Who a candidate is about, as the subject boost compares them with the query's names: a fact's
    subject entities and ``subject``; a turn's speaker when its ``opening`` names one
    (:func:`memory_engine.domain.entries.speaker_of`); ``USER`` for an episode of role ``user`` (whom
    a query in the first person asks about). Chunks have none."""
    names = list(row.get("subjects") or ())
    if row.get("subject"):
        names.append(normalize_entity_name(row["subject"]))
    speaker = speaker_of(row["opening"]) if row.get("opening") else None
    if speaker:
        names.append(normalize_entity_name(speaker))
    if row.get("role") == USER:
        names.append(USER)
    return tuple(dict.fromkeys(names))


def candidates_of(source: SourceType, rows: Sequence[Row], ranked: RankedLists) -> dict[ResultKey, Candidate]:
    """A candidate read's rows as :class:`Candidate` s, the scores the signals returned filled in."""
    vector_scores = ranked.scored(Signal.VECTOR)
    keyword_scores = ranked.scored(Signal.KEYWORD)
    found: dict[ResultKey, Candidate] = {}
    for row in rows:
        key: ResultKey = (source, row["id"])
        similarity = row["similarity"] if row["similarity"] is not None else vector_scores.get(key)
        bm25_score = row["bm25"] if row["bm25"] is not None else keyword_scores.get(key, 0.0)
        found[key] = Candidate(
            None if similarity is None else float(similarity), float(bm25_score or 0.0),
            tuple((source, before) for before in row["prev_ids"] or ()),
            subjects(row), row.get("valid_from"),
        )
    return found
