"""The write funnel's statements in PostgreSQL: the memory's lock, the shortlist, the insert, and
the write session that runs them on one locked transaction (single writes and batches alike).

A funnel write is ~3 round trips: (1) check the memory is in the project, take its advisory
lock and set the HNSW knobs in one statement; (2) the shortlist over the partial HNSW index
(``invalidated_at IS NULL`` in the WHERE clause so the planner can use it, with iterative scans so
the ``memory_id`` filter never starves the result); (3) one INSERT (entities and links ride in
the same statement as CTEs); then COMMIT.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from memory_engine import ids
from memory_engine.adapters.postgres.entry_sql import (
    ENTITY_CTES,
    ENTITY_MERGE,
    ENTRY_RETURNING,
    ENTRY_SELECT,
    INSERT_COLUMNS,
    INSERT_VALUES,
    entity_params,
    entry_from_row,
    jsonb,
    link_entities,
    not_expired,
)
from memory_engine.domain.entities import NewEntityLink
from memory_engine.domain.entries import MAX_CONTEXT_CHARS, MemoryEntry, NewEntry, turn_text
from memory_engine.errors import NotFound
from memory_engine.ports.embedder import Vector
from memory_engine.ports.entries import Candidate, EntityVectors


class PostgresWriteSession:
    """The funnel's transaction for one memory; the advisory lock is held until it ends."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]], project_id: str, memory_id: str) -> None:
        self._conn = conn
        self._project_id = project_id
        self._memory_id = memory_id

    def shortlist(self, embedding: Vector, k: int, *, content: str | None = None,
                  own: Vector | None = None) -> list[Candidate]:
        query, params = shortlist_statement(self._project_id, self._memory_id, embedding, k, content, own)
        return shortlist_candidates(self._conn.execute(query, params).fetchall(), k)

    def find_live_by_content(self, content: str) -> MemoryEntry | None:
        row = self._conn.execute(
            f"SELECT {ENTRY_SELECT} FROM memory_entries e WHERE e.memory_id = %(m)s AND e.project_id = %(p)s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            f" AND e.invalidated_at IS NULL AND {not_expired()} AND md5(e.content) = md5(%(c)s) AND e.content = %(c)s"
            " ORDER BY e.created_at LIMIT 1",
            {"m": self._memory_id, "p": self._project_id, "c": content},
        ).fetchone()
        return entry_from_row(row) if row else None

    def get_live(self, entry_id: str) -> MemoryEntry | None:
        row = self._conn.execute(LIVE_ENTRY, (entry_id, self._memory_id, self._project_id)).fetchone()
        return entry_from_row(row) if row else None

    def insert(
        self, entry: NewEntry, *, content: str, embedding: Vector | None, links: Sequence[NewEntityLink],
        entity_vectors: EntityVectors, context: str | None = None, own_embedding: Vector | None = None,
    ) -> MemoryEntry:
        query, params = insert_statement(self._project_id, self._memory_id, ids.new_id(ids.ENTRY), entry, content=content,
                                          embedding=embedding, links=links, entity_vectors=entity_vectors, context=context,
                                          own_embedding=own_embedding)
        row = self._conn.execute(query, params).fetchone()
        assert row is not None
        return entry_from_row(row)

    def merge_into(
        self, entry_id: str, *, content: str, embedding: Vector | None, fields: dict[str, Any],
        links: Sequence[NewEntityLink], entity_vectors: EntityVectors,
    ) -> MemoryEntry:
        params = {**fields, "id": entry_id, "p": self._project_id, "content": content, "embedding": embedding}
        if "metadata" in params:
            params["metadata"] = jsonb(params["metadata"])
        sets = ", ".join([f"{name} = %({name})s" for name in fields] + [
            "content = %(content)s", "embedding = %(embedding)s", "own_embedding = NULL", "updated_at = clock_timestamp()"])
        self._conn.execute(
            f"UPDATE memory_entries SET {sets} WHERE id = %(id)s AND project_id = %(p)s AND invalidated_at IS NULL",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            params,
        )
        if links:
            link_entities(self._conn, self._project_id, self._memory_id, entry_id, links, entity_vectors)
        merged = self.get_live(entry_id)
        assert merged is not None
        return merged


    def extend_context(self, entry_id: str, text: str) -> None:
        self._conn.execute(
            "UPDATE memory_entries SET context = left(coalesce(context || E'\\n', '') || %s, %s)"
            " WHERE id = %s AND memory_id = %s AND project_id = %s AND invalidated_at IS NULL",
            (text, MAX_CONTEXT_CHARS, entry_id, self._memory_id, self._project_id),
        )

    def invalidate(self, entry_id: str, *, superseded_by: str, reason: str) -> None:
        self._conn.execute(
            "UPDATE memory_entries SET invalidated_at = clock_timestamp(), superseded_by_entry_id = %s,"
            " invalidation_reason = %s, updated_at = clock_timestamp()"
            " WHERE id = %s AND project_id = %s AND invalidated_at IS NULL",
            (superseded_by, reason, entry_id, self._project_id),
        )


LIVE_ENTRY = (f"SELECT {ENTRY_SELECT} FROM memory_entries e WHERE e.id = %s AND e.memory_id = %s AND e.project_id = %s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
               f" AND e.invalidated_at IS NULL AND {not_expired()}")

#: The cosine similarity of each new vector (``j``, 1-based) to the vectors before it of the same
#: memory: the other new ones (``i < j``) and the entries ``w`` (``earlier``), with the operator the
#: shortlist uses (``1 - (stored <=> new)``), so a batch compares its facts with each other exactly as
#: the funnel compares a fact with the ones written before it.
PAIR_SIMILARITIES = (
    "SELECT a.i, NULL::text AS earlier, b.i AS j, 1 - (a.v <=> b.v) AS similarity"
    " FROM unnest(%(v)b::vector[], %(m)s::text[]) WITH ORDINALITY AS a(v, m, i)"
    " JOIN unnest(%(v)b::vector[], %(m)s::text[]) WITH ORDINALITY AS b(v, m, i) ON b.m = a.m AND b.i > a.i"
    " UNION ALL"
    " SELECT NULL, e.id, b.i, 1 - (e.embedding <=> b.v) FROM memory_entries e"
    " JOIN unnest(%(v)b::vector[], %(m)s::text[]) WITH ORDINALITY AS b(v, m, i) ON b.m = e.memory_id"
    " WHERE e.id = ANY(%(w)s::text[])"
)


#: A shortlisted entry's similarity to a new fact whose vector ``v`` read a context, with ``o`` the
#: fact's own vector: the lower of the two readings, ``v`` against the entry's vector and ``o``
#: against the nearer of the entry's vectors. A turn after a long answer is mostly the answer's
#: text in ``v`` (a plain client writing BEAM's conversations at the default threshold lost 810 of
#: 13,637 turns, each "a duplicate" of the answer before it); it is a duplicate only when what it
#: says alone is one too.
_WITH_OWN = "least(1 - (e.embedding <=> %(v)s), greatest(1 - (e.embedding <=> %(o)s), 1 - (e.own_embedding <=> %(o)s)))"


def shortlist_statement(
    project_id: str, memory_id: str, embedding: Vector, k: int, content: str | None, own: Vector | None = None,
) -> tuple[str, dict[str, Any]]:
    # The HNSW scan is approximate, so an identical live fact (same content) is looked up
    # exactly in the same round trip (memory_entries_live_content_idx) and always competes, as
    # similarity 1: the same sentence is the same fact even when the two were embedded with
    # different anchors ("<fact>. About: <anchor>.") or one has no vector (and a client's retry of a
    # turn, which reads the turn itself as its context, is not written twice).
    similarity = "1 - (e.embedding <=> %(v)s)" if own is None else _WITH_OWN
    return (
        f"(SELECT {ENTRY_SELECT}, 1.0::float8 AS similarity FROM memory_entries e"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        " WHERE e.memory_id = %(m)s AND e.project_id = %(p)s AND e.invalidated_at IS NULL"
        f" AND {not_expired()} AND md5(e.content) = md5(%(c)s) AND e.content = %(c)s ORDER BY e.created_at LIMIT 1)"
        " UNION ALL"
        f" (SELECT {ENTRY_SELECT}, {similarity} AS similarity FROM memory_entries e"
        f" WHERE e.memory_id = %(m)s AND e.project_id = %(p)s AND e.invalidated_at IS NULL AND {not_expired()}"
        " ORDER BY e.embedding <=> %(v)s LIMIT %(k)s)",
        {"v": embedding, "m": memory_id, "p": project_id, "k": k, "c": content, "o": own},
    )


def shortlist_candidates(rows: Sequence[dict[str, Any]], k: int) -> list[Candidate]:
    """The shortlist's rows as candidates, most similar first (the exact content match first among
    equals), each entry once."""
    best: dict[str, Candidate] = {}
    for r in rows:
        if r["similarity"] is not None and r["id"] not in best:
            best[r["id"]] = Candidate(entry_from_row(r), float(r["similarity"]))
    return sorted(best.values(), key=lambda c: c.similarity, reverse=True)[:k]


def insert_statement(
    project_id: str, memory_id: str, entry_id: str, entry: NewEntry, *, content: str, embedding: Vector | None,
    links: Sequence[NewEntityLink], entity_vectors: EntityVectors, context: str | None,
    own_embedding: Vector | None = None,
) -> tuple[str, dict[str, Any]]:
    """One entry's INSERT (its entities upserted and linked in the same statement), returning the
    entry as the API reads it; ``own_embedding``: a turn's vector of its own text when ``embedding``
    read its context too (migration 0011)."""
    params: dict[str, Any] = {
        "id": entry_id, "p": project_id, "m": memory_id, "content": content,
        "source_type": entry.source_type, "tags": entry.tags, "metadata": jsonb(entry.metadata),
        "embedding": embedding, "own_embedding": own_embedding,
        "subject": entry.subject, "predicate": entry.predicate, "object": entry.object,
        "confidence": entry.confidence, "source_quote": entry.source_quote, "context": context,
        "valid_from": entry.valid_from, "valid_to": entry.valid_to, "source_conversation_id": entry.source_conversation_id,
        "source_generation_id": entry.source_generation_id, "source_event_id": entry.source_event_id,
        "expires_at": entry.expires_at,
    }
    # the row's own time, not the transaction's: a batch writes many facts in one transaction
    # and lists and conversations order by created_at (one value for both columns)
    insert = (f"INSERT INTO memory_entries AS e ({INSERT_COLUMNS}, created_at, updated_at)"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
              f" SELECT {INSERT_VALUES}, ts.t, ts.t FROM (SELECT clock_timestamp() AS t) ts")
    if not links:
        return f"{insert} RETURNING {ENTRY_RETURNING}, '[]'::json AS entities", params
    params.update(entity_params(project_id, links, entity_vectors))
    return (f"WITH ins AS ({insert} RETURNING {ENTRY_RETURNING}), {ENTITY_CTES.format(target='%(id)s', memory='%(m)s')}"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            f" SELECT ins.*, ({ENTITY_MERGE}) AS entities FROM ins", params)


def previous_turn(
    conn: psycopg.Connection[dict[str, Any]], project_id: str, memory_id: str, conversation_id: str
) -> tuple[str, str] | None:
    row = conn.execute(
        "SELECT e.id, e.subject, e.content FROM memory_entries e WHERE e.memory_id = %s AND e.source_conversation_id = %s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        f" AND e.invalidated_at IS NULL AND {not_expired()} AND e.project_id = %s"
        " ORDER BY e.created_at DESC, e.id DESC LIMIT 1",
        (memory_id, conversation_id, project_id),
    ).fetchone()
    return None if row is None else (str(row["id"]), turn_text(row["subject"], row["content"]))


def lock_memory(conn: psycopg.Connection[dict[str, Any]], project_id: str, memory_id: str, ef_search: int) -> None:
    """Check the memory is in the project and take its write lock (plus the HNSW knobs) in one trip."""
    row = conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
        " set_config('hnsw.ef_search', %s, true),"
        " pg_advisory_xact_lock(hashtextextended(m.id, 0))"
        " FROM memories m WHERE m.id = %s AND m.project_id = %s",
        (str(ef_search), memory_id, project_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"memory {memory_id} not found", details={"memory_id": memory_id})
