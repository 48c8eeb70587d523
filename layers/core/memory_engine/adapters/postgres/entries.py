"""Memory entries in PostgreSQL: the repository (reads, lists, replace, deletes) and the batch's
shared transaction. The funnel's own statements and write session are in ``entry_writes``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg

from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.embedding_repair import missing_entries, store_missing
from memory_engine.adapters.postgres.entry_context import GONE, delete_entries, forget_lines
from memory_engine.adapters.postgres.entry_sql import ENTRY_SELECT, entry_from_row, jsonb, link_entities, not_expired
from memory_engine.adapters.postgres.entry_writes import (
    LIVE_ENTRY,
    PAIR_SIMILARITIES,
    PostgresWriteSession,
    insert_statement,
    lock_memory,
    previous_turn,
    shortlist_candidates,
    shortlist_statement,
)
from memory_engine.adapters.postgres.paging import newest_first
from memory_engine.domain.cursor import Cursor
from memory_engine.domain.entries import MemoryEntry, turn_text
from memory_engine.errors import Conflict, NotFound
from memory_engine.ports.embedder import Vector
from memory_engine.ports.entries import (
    Comparisons,
    Deletion,
    EntityVectors,
    EntryChanges,
    EntryInsert,
    EntryRead,
    Replaced,
    ShortlistRequest,
)


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
            lock_memory(conn, project_id, memory_id, self._ef_search)
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
            return previous_turn(conn, project_id, memory_id, conversation_id)

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

    def replace(self, project_id: str, entry_id: str, changes: EntryChanges) -> Replaced:
        with self._db.connection() as conn:
            found = conn.execute(
                "SELECT memory_id FROM memory_entries WHERE id = %s AND project_id = %s", (entry_id, project_id)
            ).fetchone()
            if found is None:
                raise NotFound(f"memory entry {entry_id} not found", details={"entry_id": entry_id})
            lock_memory(conn, project_id, found["memory_id"], self._ef_search)
            current = conn.execute(
                f"SELECT invalidated_at, {GONE} FROM memory_entries WHERE id = %s AND project_id = %s FOR UPDATE",  # noqa: S608 - a fixed column list; values are bound parameters
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
            if changes.reembed:  # of the entry's own text: a turn's second, own vector is dropped (migration 0011)
                fields["embedding"] = changes.embedding
                fields["own_embedding"] = None
            sets = ", ".join([f"{name} = %({name})s" for name in fields] + ["updated_at = clock_timestamp()"])
            conn.execute(
                f"UPDATE memory_entries SET {sets} WHERE id = %(id)s AND project_id = %(p)s",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                {**fields, "id": entry_id, "p": project_id},
            )
            # a turn's old line leaves the turns around it, which read its new one instead
            was = turn_text(current["subject"], current["content"])
            now = turn_text(fields.get("subject", current["subject"]), fields.get("content", current["content"]))
            cleared = forget_lines(conn, project_id, [current]) if now != was else []
            if changes.links is not None:
                conn.execute("DELETE FROM entry_entities WHERE entry_id = %s", (entry_id,))
                if changes.links:
                    link_entities(conn, project_id, found["memory_id"], entry_id, changes.links,
                                  changes.entity_vectors or EntityVectors({}))
            row = conn.execute(
                f"SELECT {ENTRY_SELECT} FROM memory_entries e WHERE e.id = %s AND e.project_id = %s",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                (entry_id, project_id),
            ).fetchone()
        assert row is not None
        return Replaced(entry_from_row(row), tuple(cleared))

    def delete(self, project_id: str, entry_id: str) -> Deletion:
        done = self.delete_many(project_id, [entry_id])
        if not done.deleted:
            raise NotFound(f"memory entry {entry_id} not found", details={"entry_id": entry_id})
        return done

    def delete_many(self, project_id: str, entry_ids: Sequence[str]) -> Deletion:
        with self._db.connection() as conn:
            return delete_entries(conn, project_id, entry_ids)

    def uncovered(self, project_id: str, entry_ids: Sequence[str]) -> Sequence[tuple[str, str]]:
        if not entry_ids:
            return []
        with self._db.connection() as conn:
            return missing_entries(conn, project_id, entry_ids)

    def store_vectors(self, project_id: str, vectors: Sequence[tuple[str, Vector]]) -> int:
        if not vectors:
            return 0
        with self._db.connection() as conn:
            return store_missing(conn, "memory_entries", vectors, project_id)


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
        return previous_turn(self._conn, project_id, memory_id, conversation_id)

    def writable(self, memory_id: str) -> bool:
        return memory_id in self._locked

    def held_entries(self, memory_id: str) -> bool:
        return memory_id in self._with_entries

    def shortlists(self, requests: Sequence[ShortlistRequest], k: int, *, written: Sequence[str] = ()) -> Comparisons:
        # pipeline mode: every statement is sent at once and run in order, one round trip in all
        with self._conn.pipeline():
            cursors = [self._conn.execute(*shortlist_statement(self._project_id, r.memory_id, r.embedding, k, r.content))
                       if r.stored else None for r in requests]
            pairs = self._conn.execute(PAIR_SIMILARITIES, {
                "v": [r.embedding for r in requests], "m": [r.memory_id for r in requests], "w": list(written)})
            candidates = [shortlist_candidates(cursor.fetchall(), k) if cursor is not None else [] for cursor in cursors]
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
                    cursors.append(self._conn.execute(LIVE_ENTRY, (step.entry_id, step.memory_id, self._project_id)))
                else:
                    cursors.append(self._conn.execute(*insert_statement(
                        self._project_id, step.memory_id, step.entry_id, step.entry, content=step.content,
                        embedding=step.embedding, links=step.links, entity_vectors=step.entity_vectors,
                        context=step.context)))
            rows = [cursor.fetchone() for cursor in cursors]
        return [entry_from_row(row) if row else None for row in rows]
