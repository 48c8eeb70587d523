"""Episodes in PostgreSQL (table ``episodes``; unique per project and event id)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import Connection
from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.entry_context import lock_memories
from memory_engine.adapters.postgres.episode_context import appended, delete_turns, refresh, store_read, to_read
from memory_engine.domain.cursor import Cursor
from memory_engine.errors import NotFound
from memory_engine.ports.embedder import Vector
from memory_engine.ports.episodes import Episode, EpisodeHit, EpisodeWindow, NewEpisode, TurnBefore, TurnsDeleted

_COLUMNS = (
    "id, project_id, memory_id, conversation_id, turn_id, event_id, occurred_at, transcript, messages, created_at,"
    " embedding IS NOT NULL AS has_embedding"
)


#: The position of a turn in its conversation: when it was said (the row's creation for an episode
#: without a time), then its id.
_TURN_ORDER = "coalesce(occurred_at, created_at)"


def episode_id(episode: NewEpisode) -> str:
    """The id given to a new episode: the one chosen by the caller, else a fresh one."""
    return episode.id or ids.new_id(ids.EPISODE)


def _episode(row: dict[str, Any]) -> Episode:
    return Episode(
        id=row["id"], project_id=row["project_id"], memory_id=row["memory_id"],
        conversation_id=row["conversation_id"], turn_id=row["turn_id"], event_id=row["event_id"],
        occurred_at=row["occurred_at"], transcript=row["transcript"], messages=list(row["messages"] or []),
        created_at=row["created_at"], has_embedding=bool(row["has_embedding"]),
    )


def _insert(conn: Connection[Any], episode: NewEpisode, windows: Sequence[EpisodeWindow], context: str | None = None) -> Any:
    """The episode's row with its vector ``windows`` (and ``context``, episode_context.py), or None
    when its event was stored before (idempotent by ``event_id``) or the memory is not in the project."""
    embedding = windows[0].embedding if windows else None
    row = conn.execute(
        f"""
        INSERT INTO episodes (id, project_id, memory_id, conversation_id, turn_id, event_id, occurred_at,
                              transcript, messages, embedding, context)
        SELECT %(id)s, %(project_id)s, m.id, %(conversation_id)s, %(turn_id)s, %(event_id)s,
               %(occurred_at)s, %(transcript)s, %(messages)s, %(embedding)s, %(context)s
          FROM memories m WHERE m.id = %(memory_id)s AND m.project_id = %(project_id)s
        ON CONFLICT (project_id, event_id) WHERE event_id IS NOT NULL DO NOTHING
        RETURNING {_COLUMNS}
        """,  # noqa: S608 - identifiers from a fixed set; values are bound parameters
        {
            "id": episode_id(episode), "project_id": episode.project_id, "memory_id": episode.memory_id,
            "conversation_id": episode.conversation_id, "turn_id": episode.turn_id,
            "event_id": episode.event_id, "occurred_at": episode.occurred_at,
            "transcript": episode.transcript, "messages": Jsonb(episode.messages), "embedding": embedding,
            "context": context,
        },
    ).fetchone()
    if row is not None:
        write_windows(conn, row, windows)
    return row


def write_windows(conn: Connection[Any], row: dict[str, Any], windows: Sequence[EpisodeWindow]) -> None:
    """The episode ``row``'s vector windows over its own transcript (its ``id`` and scope columns
    ``project_id``, ``memory_id``, ``occurred_at`` copied), replacing those it had (not its window over
    the turn before it: episode_context.store_read). Every way an episode is stored or repaired writes
    them here: recorded turns, events, imports, ``memory-engine reembed``."""
    conn.execute("DELETE FROM episode_windows WHERE episode_id = %s AND read_episode_id IS NULL", (row["id"],))
    if not windows:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO episode_windows (episode_id, window_index, project_id, memory_id, occurred_at, start_char,"
            " end_char, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            [(row["id"], i, row["project_id"], row["memory_id"], row["occurred_at"], w.start, w.end, w.embedding)
             for i, w in enumerate(windows)],
        )


class PostgresEpisodeRepository:
    """Implements :class:`memory_engine.ports.episodes.EpisodeRepository`."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def store(self, episode: NewEpisode, windows: Sequence[EpisodeWindow]) -> tuple[Episode, bool]:
        """Raises NotFound when the memory is not in the project."""
        return self.store_turns([episode], [windows])[0]

    def set_windows(self, project_id: str, episode_id: str, windows: Sequence[EpisodeWindow]) -> None:
        with self._db.connection() as conn, conn.transaction():
            row = conn.execute(
                "UPDATE episodes SET embedding = %s WHERE project_id = %s AND id = %s"
                " RETURNING id, project_id, memory_id, occurred_at",
                (windows[0].embedding if windows else None, project_id, episode_id),
            ).fetchone()
            if row is not None:
                write_windows(conn, row, windows)

    def get(self, project_id: str, episode_id: str) -> Episode | None:
        return self._one_by("id", project_id, episode_id)

    def get_by_event(self, project_id: str, event_id: str) -> Episode | None:
        return self._one_by("event_id", project_id, event_id)

    def _one_by(self, column: str, project_id: str, value: str | None) -> Episode | None:
        row = self._db.fetch_one(f"SELECT {_COLUMNS} FROM episodes WHERE project_id = %s AND {column} = %s",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                                 (project_id, value))
        return _episode(row) if row else None

    def list_for_conversation(self, project_id: str, conversation_id: str) -> list[Episode]:
        rows = self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM episodes WHERE project_id = %s AND conversation_id = %s"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            " ORDER BY occurred_at, created_at, id", (project_id, conversation_id))
        return [_episode(row) for row in rows]

    def store_turns(
        self, episodes: Sequence[NewEpisode], windows: Sequence[Sequence[EpisodeWindow]]
    ) -> list[tuple[Episode, bool]]:
        """One transaction; raises NotFound when the memory is not in the project."""
        out: list[tuple[Episode, bool]] = []
        with self._db.connection() as conn, conn.transaction():
            lock_memories(conn, [episode.memory_id for episode in episodes if episode.memory_id])
            fast = appended(conn, episodes)
            for episode, own in zip(episodes, windows, strict=True):
                row = _insert(conn, episode, own, fast[0].get(episode.id or "") if fast else None)
                if row is not None:
                    out.append((_episode(row), True))
                    continue
                existing = conn.execute(
                    f"SELECT {_COLUMNS} FROM episodes WHERE project_id = %s AND event_id = %s",  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                    (episode.project_id, episode.event_id)).fetchone()
                if existing is None:
                    raise NotFound(f"memory {episode.memory_id} not found")
                out.append((_episode(existing), False))
            if fast and all(new for _, new in out):  # appended with their contexts: the turn before them gains the first
                refresh(conn, episodes[0].project_id, [fast[1]] if fast[1] else [], neighbours=False)
            elif episodes:  # the new turns and the turns around them read their neighbours
                refresh(conn, episodes[0].project_id, [ep.id for ep, new in out if new], neighbours=True)
        return out

    def list_turns(
        self, project_id: str, memory_id: str, conversation_id: str, *, limit: int, cursor: Cursor | None,
        newest_first: bool = False,
    ) -> tuple[list[Episode], Cursor | None]:
        direction, after = ("DESC", "<") if newest_first else ("ASC", ">")
        clauses = ["project_id = %(p)s", "memory_id = %(m)s", "conversation_id = %(c)s"]
        params: dict[str, Any] = {"p": project_id, "m": memory_id, "c": conversation_id, "n": limit + 1}
        if cursor is not None:
            clauses.append(f"({_TURN_ORDER}, id) {after} (%(at)s, %(id)s)")
            params |= {"at": cursor.created_at, "id": cursor.id}
        rows = self._db.fetch_all(
            f"SELECT {_COLUMNS}, {_TURN_ORDER} AS turn_at FROM episodes WHERE {' AND '.join(clauses)}"  # noqa: S608 - identifiers from a fixed set; values are bound parameters
            f" ORDER BY {_TURN_ORDER} {direction}, id {direction} LIMIT %(n)s", params)
        page = rows[:limit]
        following = Cursor(page[-1]["turn_at"], page[-1]["id"]) if len(rows) > limit else None
        return [_episode(row) for row in page], following

    def delete_turns(self, project_id: str, memory_id: str, *, conversation_id: str | None = None,
                     turn_id: str | None = None) -> TurnsDeleted:
        with self._db.connection() as conn:
            lock_memories(conn, [memory_id])
            return delete_turns(conn, project_id, "memory_id = %(m)s AND (%(c)s::text IS NULL OR conversation_id = %(c)s)"
                                " AND (%(t)s::text IS NULL OR turn_id = %(t)s)",
                                {"m": memory_id, "c": conversation_id, "t": turn_id})

    def turns_to_read(self, project_id: str, episode_ids: Sequence[str]) -> list[TurnBefore]:
        with self._db.connection() as conn:
            return to_read(conn, project_id, episode_ids)

    def store_read_windows(self, project_id: str, windows: Sequence[tuple[TurnBefore, Vector]]) -> int:
        with self._db.connection() as conn, conn.transaction():
            return store_read(conn, project_id, windows)

    def search_similar(
        self, project_id: str, embedding: Vector, *, memory_ids: Sequence[str] | None = None, limit: int = 10
    ) -> list[EpisodeHit]:
        with self._db.connection() as conn:
            # filtered HNSW scans keep searching until `limit` rows pass the filter (pgvector >= 0.8)
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = conn.execute(
                f"""
                SELECT {_COLUMNS}, 1 - (embedding <=> %(q)s) AS similarity
                  FROM episodes
                 WHERE project_id = %(p)s AND embedding IS NOT NULL
                   AND (%(m)s::text[] IS NULL OR memory_id = ANY(%(m)s::text[]))
                 ORDER BY embedding <=> %(q)s
                 LIMIT %(limit)s
                """,  # noqa: S608 - identifiers from a fixed set; values are bound parameters
                {"q": embedding, "p": project_id, "m": list(memory_ids) if memory_ids is not None else None, "limit": limit},
            ).fetchall()
        hits = [EpisodeHit(_episode(row), float(row["similarity"])) for row in rows]
        hits.sort(key=lambda hit: hit.similarity, reverse=True)  # relaxed_order may return near-sorted rows
        return hits
