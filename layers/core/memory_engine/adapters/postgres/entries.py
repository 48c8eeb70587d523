"""Memory entries, their entities, and the write funnel's locked transaction, in PostgreSQL.

A funnel write is ~3 round trips: (1) check the memory is in the project, take its advisory
lock and set the HNSW knobs in one statement; (2) the shortlist over the partial HNSW index
(``invalidated_at IS NULL`` in the WHERE clause so the planner can use it, with iterative scans so
the ``memory_id`` filter never starves the result); (3) one INSERT (entities and links ride in
the same statement as CTEs); then COMMIT.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.entry_sql import (
    ENTITY_CTES,
    ENTITY_MERGE,
    ENTRY_COLUMNS,
    ENTRY_SELECT,
    INSERT_COLUMNS,
    INSERT_VALUES,
    entity_params,
    entry_from_row,
    jsonb,
    link_entities,
    not_expired,
)
from memory_engine.adapters.postgres.paging import newest_first
from memory_engine.domain.cursor import Cursor
from memory_engine.domain.entities import NewEntityLink
from memory_engine.domain.entries import MAX_CONTEXT_CHARS, MemoryEntry, NewEntry, turn_text
from memory_engine.errors import Conflict, NotFound
from memory_engine.ports.embedder import Vector
from memory_engine.ports.entries import (
    Candidate,
    Comparisons,
    EntityVectors,
    EntryChanges,
    EntryInsert,
    EntryRead,
    ShortlistRequest,
)


class PostgresWriteSession:
    """The funnel's transaction for one memory; the advisory lock is held until it ends."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]], project_id: str, memory_id: str) -> None:
        self._conn = conn
        self._project_id = project_id
        self._memory_id = memory_id

    def shortlist(self, embedding: Vector, k: int, *, content: str | None = None) -> list[Candidate]:
        query, params = _shortlist_statement(self._project_id, self._memory_id, embedding, k, content)
        return _candidates(self._conn.execute(query, params).fetchall(), k)

    def find_live_by_content(self, content: str) -> MemoryEntry | None:
        row = self._conn.execute(
            f"SELECT {ENTRY_SELECT} FROM memory_entries e WHERE e.memory_id = %(m)s AND e.project_id = %(p)s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            f" AND e.invalidated_at IS NULL AND {not_expired()} AND md5(e.content) = md5(%(c)s) AND e.content = %(c)s"
            " ORDER BY e.created_at LIMIT 1",
            {"m": self._memory_id, "p": self._project_id, "c": content},
        ).fetchone()
        return entry_from_row(row) if row else None

    def get_live(self, entry_id: str) -> MemoryEntry | None:
        row = self._conn.execute(_LIVE_ENTRY, (entry_id, self._memory_id, self._project_id)).fetchone()
        return entry_from_row(row) if row else None

    def insert(
        self, entry: NewEntry, *, content: str, embedding: Vector | None, links: Sequence[NewEntityLink],
        entity_vectors: EntityVectors, context: str | None = None,
    ) -> MemoryEntry:
        query, params = _insert_statement(self._project_id, self._memory_id, ids.new_id(ids.ENTRY), entry, content=content,
                                          embedding=embedding, links=links, entity_vectors=entity_vectors, context=context)
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
            "content = %(content)s", "embedding = %(embedding)s", "updated_at = clock_timestamp()"])
        self._conn.execute(
            f"UPDATE memory_entries SET {sets} WHERE id = %(id)s AND project_id = %(p)s AND invalidated_at IS NULL",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            params,
        )
        if links:
            link_entities(self._conn, self._project_id, entry_id, links, entity_vectors)
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


_LIVE_ENTRY = (f"SELECT {ENTRY_SELECT} FROM memory_entries e WHERE e.id = %s AND e.memory_id = %s AND e.project_id = %s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
               f" AND e.invalidated_at IS NULL AND {not_expired()}")

#: The cosine similarity of each new vector (``j``, 1-based) to the vectors before it of the same
#: memory: the other new ones (``i < j``) and the entries ``w`` (``earlier``), with the operator the
#: shortlist uses (``1 - (stored <=> new)``), so a batch compares its facts with each other exactly as
#: the funnel compares a fact with the ones written before it.
_PAIR_SIMILARITIES = (
    "SELECT a.i, NULL::text AS earlier, b.i AS j, 1 - (a.v <=> b.v) AS similarity"
    " FROM unnest(%(v)b::vector[], %(m)s::text[]) WITH ORDINALITY AS a(v, m, i)"
    " JOIN unnest(%(v)b::vector[], %(m)s::text[]) WITH ORDINALITY AS b(v, m, i) ON b.m = a.m AND b.i > a.i"
    " UNION ALL"
    " SELECT NULL, e.id, b.i, 1 - (e.embedding <=> b.v) FROM memory_entries e"
    " JOIN unnest(%(v)b::vector[], %(m)s::text[]) WITH ORDINALITY AS b(v, m, i) ON b.m = e.memory_id"
    " WHERE e.id = ANY(%(w)s::text[])"
)


def _shortlist_statement(
    project_id: str, memory_id: str, embedding: Vector, k: int, content: str | None
) -> tuple[str, dict[str, Any]]:
    # The HNSW scan is approximate, so an identical live fact (same content) is looked up
    # exactly in the same round trip (memory_entries_live_content_idx) and always competes, as
    # similarity 1: the same sentence is the same fact even when the two were embedded with
    # different anchors ("<fact>. About: <anchor>.") or one has no vector.
    return (
        f"(SELECT {ENTRY_SELECT}, 1.0::float8 AS similarity FROM memory_entries e"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        " WHERE e.memory_id = %(m)s AND e.project_id = %(p)s AND e.invalidated_at IS NULL"
        f" AND {not_expired()} AND md5(e.content) = md5(%(c)s) AND e.content = %(c)s ORDER BY e.created_at LIMIT 1)"
        " UNION ALL"
        f" (SELECT {ENTRY_SELECT}, 1 - (e.embedding <=> %(v)s) AS similarity FROM memory_entries e"
        f" WHERE e.memory_id = %(m)s AND e.project_id = %(p)s AND e.invalidated_at IS NULL AND {not_expired()}"
        " ORDER BY e.embedding <=> %(v)s LIMIT %(k)s)",
        {"v": embedding, "m": memory_id, "p": project_id, "k": k, "c": content},
    )


def _candidates(rows: Sequence[dict[str, Any]], k: int) -> list[Candidate]:
    """The shortlist's rows as candidates, most similar first (the exact content match first among
    equals), each entry once."""
    best: dict[str, Candidate] = {}
    for r in rows:
        if r["similarity"] is not None and r["id"] not in best:
            best[r["id"]] = Candidate(entry_from_row(r), float(r["similarity"]))
    return sorted(best.values(), key=lambda c: c.similarity, reverse=True)[:k]


def _insert_statement(
    project_id: str, memory_id: str, entry_id: str, entry: NewEntry, *, content: str, embedding: Vector | None,
    links: Sequence[NewEntityLink], entity_vectors: EntityVectors, context: str | None,
) -> tuple[str, dict[str, Any]]:
    """One entry's INSERT (its entities upserted and linked in the same statement), returning the
    entry as the API reads it."""
    params: dict[str, Any] = {
        "id": entry_id, "p": project_id, "m": memory_id, "content": content,
        "source_type": entry.source_type, "tags": entry.tags, "metadata": jsonb(entry.metadata),
        "embedding": embedding, "subject": entry.subject, "predicate": entry.predicate, "object": entry.object,
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
        return f"{insert} RETURNING {ENTRY_COLUMNS}, '[]'::json AS entities", params
    params.update(entity_params(project_id, links, entity_vectors))
    return (f"WITH ins AS ({insert} RETURNING {ENTRY_COLUMNS}), {ENTITY_CTES.format(target='%(id)s')}"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            f" SELECT ins.*, ({ENTITY_MERGE}) AS entities FROM ins", params)


def _conversation_context(
    conn: psycopg.Connection[dict[str, Any]], project_id: str, memory_id: str, conversation_id: str
) -> tuple[str, str] | None:
    row = conn.execute(
        "SELECT e.id, e.subject, e.content FROM memory_entries e WHERE e.memory_id = %s AND e.source_conversation_id = %s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        f" AND e.invalidated_at IS NULL AND {not_expired()} AND e.project_id = %s"
        " ORDER BY e.created_at DESC, e.id DESC LIMIT 1",
        (memory_id, conversation_id, project_id),
    ).fetchone()
    return None if row is None else (str(row["id"]), turn_text(row["subject"], row["content"]))


def _lock_memory(conn: psycopg.Connection[dict[str, Any]], project_id: str, memory_id: str, ef_search: int) -> None:
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


class PostgresEntryRepository:
    """Entries scoped by project; see :class:`memory_engine.ports.entries.EntryRepository`."""

    def __init__(self, database: Database, *, ef_search: int = 40) -> None:
        # ef_search 40 (pgvector's default) finds the nearest live entry reliably for dedup; 100 costs
        # 2.4x the shortlist time (bench/write_funnel.py) for candidates the decision never uses.
        self._db = database
        self._ef_search = ef_search

    @contextlib.contextmanager
    def write_session(self, project_id: str, memory_id: str) -> Iterator[PostgresWriteSession]:
        with self._db.connection() as conn:
            _lock_memory(conn, project_id, memory_id, self._ef_search)
            yield PostgresWriteSession(conn, project_id, memory_id)

    @contextlib.contextmanager
    def one_transaction(self, project_id: str, memory_ids: Sequence[str]) -> Iterator[_SharedTransactionEntries]:
        with self._db.connection() as conn, conn.transaction():
            # every memory of the batch that is in the project, locked (in id order, so two batches
            # never deadlock) with the HNSW knobs set, once for the whole transaction
            ids_ = sorted(set(memory_ids))
            with conn.pipeline():  # one round trip; the second statement runs once the locks are held
                locks = conn.execute(
                    "SELECT id, pg_advisory_xact_lock(h) FROM (SELECT m.id, hashtextextended(m.id, 0) AS h FROM memories m"
                    " WHERE m.project_id = %s AND m.id = ANY(%s::text[]) ORDER BY m.id) locks"
                    " CROSS JOIN (SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
                    " set_config('hnsw.ef_search', %s, true)) knobs",
                    (project_id, ids_, str(self._ef_search)),
                )
                held = conn.execute(
                    "SELECT m.id FROM unnest(%s::text[]) AS m(id) WHERE EXISTS (SELECT 1 FROM memory_entries e"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                    f" WHERE e.memory_id = m.id AND e.project_id = %s AND e.invalidated_at IS NULL AND {not_expired()})",
                    (ids_, project_id),
                )
                locked = {str(r["id"]) for r in locks.fetchall()}
                with_entries = {str(r["id"]) for r in held.fetchall()}
            yield _SharedTransactionEntries(self, conn, project_id=project_id, locked=locked,
                                            with_entries=with_entries & locked)

    def conversation_context(self, project_id: str, memory_id: str, conversation_id: str) -> tuple[str, str] | None:
        with self._db.connection() as conn:
            return _conversation_context(conn, project_id, memory_id, conversation_id)

    def get(self, project_id: str, entry_id: str) -> MemoryEntry:
        row = self._db.fetch_one(f"SELECT {ENTRY_SELECT} FROM memory_entries e WHERE e.id = %s AND e.project_id = %s",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                                 (entry_id, project_id))
        if row is None:
            raise NotFound(f"memory entry {entry_id} not found", details={"entry_id": entry_id})
        return entry_from_row(row)

    def list(
        self, project_id: str, *, memory_id: str | None, include_invalidated: bool = False, limit: int = 20,
        cursor: Cursor | None = None,
    ) -> tuple[list[MemoryEntry], str | None]:
        clauses = ["e.project_id = %(p)s"]
        params: dict[str, Any] = {"p": project_id}
        if memory_id is not None:
            clauses.append("e.memory_id = %(m)s")
            params["m"] = memory_id
        if not include_invalidated:
            clauses.extend(["e.invalidated_at IS NULL", not_expired()])
        with self._db.connection() as conn:
            if memory_id is not None and conn.execute(
                "SELECT 1 FROM memories WHERE id = %s AND project_id = %s", (memory_id, project_id)
            ).fetchone() is None:
                raise NotFound(f"memory {memory_id} not found", details={"memory_id": memory_id})
            rows, after = newest_first(conn, f"SELECT {ENTRY_SELECT} FROM memory_entries e", clauses, params,  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                                       limit=limit, cursor=cursor, alias="e")
        return [entry_from_row(r) for r in rows], after

    def replace(self, project_id: str, entry_id: str, changes: EntryChanges) -> MemoryEntry:
        with self._db.connection() as conn:
            found = conn.execute(
                "SELECT memory_id FROM memory_entries WHERE id = %s AND project_id = %s", (entry_id, project_id)
            ).fetchone()
            if found is None:
                raise NotFound(f"memory entry {entry_id} not found", details={"entry_id": entry_id})
            _lock_memory(conn, project_id, found["memory_id"], self._ef_search)
            current = conn.execute(
                "SELECT invalidated_at FROM memory_entries WHERE id = %s AND project_id = %s FOR UPDATE",
                (entry_id, project_id),
            ).fetchone()
            if current is None:
                raise NotFound(f"memory entry {entry_id} not found", details={"entry_id": entry_id})
            if current["invalidated_at"] is not None:
                raise Conflict(
                    f"memory entry {entry_id} was invalidated; history is immutable (write a new entry instead)",
                    details={"entry_id": entry_id},
                )
            fields = dict(changes.fields)
            if "metadata" in fields:
                fields["metadata"] = jsonb(fields["metadata"])
            if changes.reembed:
                fields["embedding"] = changes.embedding
            sets = ", ".join([f"{name} = %({name})s" for name in fields] + ["updated_at = clock_timestamp()"])
            conn.execute(
                f"UPDATE memory_entries SET {sets} WHERE id = %(id)s AND project_id = %(p)s",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                {**fields, "id": entry_id, "p": project_id},
            )
            if changes.links is not None:
                conn.execute("DELETE FROM entry_entities WHERE entry_id = %s", (entry_id,))
                if changes.links:
                    link_entities(conn, project_id, entry_id, changes.links, changes.entity_vectors or EntityVectors({}))
            row = conn.execute(
                f"SELECT {ENTRY_SELECT} FROM memory_entries e WHERE e.id = %s AND e.project_id = %s",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                (entry_id, project_id),
            ).fetchone()
        assert row is not None
        return entry_from_row(row)

    def delete(self, project_id: str, entry_id: str) -> None:
        with self._db.connection() as conn:
            cur = conn.execute("DELETE FROM memory_entries WHERE id = %s AND project_id = %s", (entry_id, project_id))
            if cur.rowcount == 0:
                raise NotFound(f"memory entry {entry_id} not found", details={"entry_id": entry_id})

    def delete_many(self, project_id: str, entry_ids: Sequence[str]) -> set[str]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "DELETE FROM memory_entries WHERE project_id = %s AND id = ANY(%s::text[]) RETURNING id",
                (project_id, list(entry_ids)),
            ).fetchall()
        return {str(r["id"]) for r in rows}


class _SharedTransactionEntries(PostgresEntryRepository):
    """What :meth:`PostgresEntryRepository.one_transaction` yields: the funnel's two repository
    calls (``write_session``, ``conversation_context``) and the batch's set-based steps
    (``shortlists``, ``write_in_order``: the funnel's statements, many a round trip in pipeline
    mode) on one open transaction; the other methods run on their own connections as usual."""

    def __init__(
        self, parent: PostgresEntryRepository, conn: psycopg.Connection[dict[str, Any]], *, project_id: str,
        locked: set[str], with_entries: set[str],
    ) -> None:
        super().__init__(parent._db, ef_search=parent._ef_search)
        self._conn = conn
        self._project_id = project_id
        self._locked = locked
        self._with_entries = with_entries

    @contextlib.contextmanager
    def write_session(self, project_id: str, memory_id: str) -> Iterator[PostgresWriteSession]:
        # The memories were checked and locked when the transaction began, so a write is just its
        # shortlist and insert (no savepoint, no lock round trip: 5 -> 2 statements a fact). An
        # unknown memory is refused before any statement, so the transaction stays usable; any
        # database error fails the whole batch (nothing of it is stored).
        if memory_id not in self._locked:
            raise NotFound(f"memory {memory_id} not found", details={"memory_id": memory_id})
        yield PostgresWriteSession(self._conn, project_id, memory_id)

    def conversation_context(self, project_id: str, memory_id: str, conversation_id: str) -> tuple[str, str] | None:
        return _conversation_context(self._conn, project_id, memory_id, conversation_id)

    def writable(self, memory_id: str) -> bool:
        return memory_id in self._locked

    def held_entries(self, memory_id: str) -> bool:
        return memory_id in self._with_entries

    def shortlists(self, requests: Sequence[ShortlistRequest], k: int, *, written: Sequence[str] = ()) -> Comparisons:
        # pipeline mode: every statement is sent at once and run in order, one round trip in all
        with self._conn.pipeline():
            cursors = [self._conn.execute(*_shortlist_statement(self._project_id, r.memory_id, r.embedding, k, r.content))
                       if r.stored else None for r in requests]
            pairs = self._conn.execute(_PAIR_SIMILARITIES, {
                "v": [r.embedding for r in requests], "m": [r.memory_id for r in requests], "w": list(written)})
            candidates = [_candidates(cursor.fetchall(), k) if cursor is not None else [] for cursor in cursors]
            among: dict[tuple[int, int], float] = {}
            to_written: dict[tuple[str, int], float] = {}
            for row in pairs.fetchall():
                if row["similarity"] is None:
                    continue
                if row["earlier"] is not None:
                    to_written[(str(row["earlier"]), int(row["j"]) - 1)] = float(row["similarity"])
                else:
                    among[(int(row["i"]) - 1, int(row["j"]) - 1)] = float(row["similarity"])
        return Comparisons(candidates, among, to_written)

    def write_in_order(self, steps: Sequence[EntryInsert | EntryRead]) -> list[MemoryEntry | None]:
        with self._conn.pipeline():
            cursors = []
            for step in steps:
                if isinstance(step, EntryRead):
                    cursors.append(self._conn.execute(_LIVE_ENTRY, (step.entry_id, step.memory_id, self._project_id)))
                else:
                    cursors.append(self._conn.execute(*_insert_statement(
                        self._project_id, step.memory_id, step.entry_id, step.entry, content=step.content,
                        embedding=step.embedding, links=step.links, entity_vectors=step.entity_vectors,
                        context=step.context)))
            rows = [cursor.fetchone() for cursor in cursors]
        return [entry_from_row(row) if row else None for row in rows]
