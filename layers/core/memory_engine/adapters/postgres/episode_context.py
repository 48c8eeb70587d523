"""An episode's ``context``: the transcripts of the turns around it in its conversation (migration
0013), BM25F's second field of the keyword signal, as a fact's context is; and its window over the
turn before it (migration 0014, :func:`memory_engine.domain.turns.read_after`), a vector that read
that turn.

It is derived, never sent: whenever turns are stored (a batch that comes after the conversation's
last turn gets its contexts with its rows, :func:`appended`; any other is refreshed once stored,
:func:`refresh`, with its neighbours) or deleted (:func:`delete_turns`: the turns that were around
them), the affected turns read their neighbours again, so a deleted turn's words never stay in
another turn. A turn's place is
``coalesce(occurred_at, created_at), id`` in its memory and conversation, the order the turns
endpoint lists them in (index ``episodes_turn_order_idx``).

A window over the turn before a turn names the turn it read (``read_episode_id``): deleting that
turn deletes the window in the database (ON DELETE CASCADE), and a turn whose turn before changed
(one recorded between them) loses it when the turns around the new one are refreshed. The service
then embeds the turns left without one after their new neighbour (:func:`to_read`,
:func:`store_read`; ``services.turns.read_turns_before``), best-effort, as ``memory-engine
reembed`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres.database import Row
from memory_engine.adapters.postgres.entry_context import lock_memories
from memory_engine.adapters.postgres.entry_sql import vector_text
from memory_engine.domain.entities import EMBED_WINDOW_CHARS
from memory_engine.domain.entries import CONTEXT_TURN_CHARS, MAX_CONTEXT_CHARS
from memory_engine.domain.turns import READ_BEFORE_WINDOW, read_after
from memory_engine.ports.embedder import Vector
from memory_engine.ports.episodes import NewEpisode, TurnBefore, TurnsDeleted

_AT = "coalesce({a}.occurred_at, {a}.created_at)"

#: The turn of ``t``'s conversation right before (``<``) or after (``>``) it, as ``name``.
_NEXT_TO = (
    "LEFT JOIN LATERAL (SELECT n.id, n.transcript FROM episodes n WHERE n.memory_id = t.memory_id"
    " AND n.conversation_id = t.conversation_id AND ({n_at}, n.id) {op} ({t_at}, t.id)"
    " ORDER BY {n_at} {order}, n.id {order} LIMIT 1) {name} ON true"
)
_BEFORE: Final = _NEXT_TO.format(n_at=_AT.format(a="n"), t_at=_AT.format(a="t"), op="<", order="DESC", name="b")
_AFTER: Final = _NEXT_TO.format(n_at=_AT.format(a="n"), t_at=_AT.format(a="t"), op=">", order="ASC", name="a")


def _turns(where: str) -> str:
    """The turns of a conversation that meet ``where`` (conditions on ``t``), with the turns right
    before (``b``) and after (``a``) each."""
    return f"FROM episodes t {_BEFORE} {_AFTER} WHERE {where} AND t.conversation_id IS NOT NULL AND t.memory_id IS NOT NULL"


#: The turns of a conversation among ``%(ids)s``, with the turns right before and after each.
_TURNS: Final = _turns("t.project_id = %(p)s AND t.id = ANY(%(ids)s::text[])")

#: What a turn's context is: the transcripts of the turns around it, as much of each as a fact's
#: context keeps of a neighbouring turn.
_CONTEXT: Final = (
    f"nullif(left(concat_ws(E'\\n', left(b.transcript, {CONTEXT_TURN_CHARS}), left(a.transcript, {CONTEXT_TURN_CHARS})),"
    f" {MAX_CONTEXT_CHARS}), '')"
)

_REFRESH: Final = (
    f"UPDATE episodes e SET context = c.context FROM (SELECT t.id, {_CONTEXT} AS context {_TURNS}) c"  # noqa: S608 - module constants; values are bound parameters
    " WHERE e.id = c.id AND e.context IS DISTINCT FROM c.context"
)

_AROUND: Final = f"SELECT b.id AS before_id, a.id AS after_id {_TURNS}"

#: Windows of ``%(ids)s`` over a turn that is no longer the one before theirs (a turn was recorded
#: between them; a deleted one took its windows with it).
_STALE_READS: Final = (
    f"DELETE FROM episode_windows w USING (SELECT t.id, b.id AS before_id FROM episodes t {_BEFORE}"  # noqa: S608 - module constants; values are bound parameters
    " WHERE t.project_id = %(p)s AND t.id = ANY(%(ids)s::text[])) c"
    " WHERE w.episode_id = c.id AND w.read_episode_id IS NOT NULL AND w.read_episode_id IS DISTINCT FROM c.before_id"
)


def _unread(where: str) -> str:
    """The turns that meet ``where`` and fit in one window with the turn before them
    (domain.turns.fits_after) but have no window over it: their ids, project, that turn's id and
    the two transcripts, by id."""
    return (
        "SELECT t.id, t.project_id, b.id AS before_id, b.transcript AS before, t.transcript"  # noqa: S608 - module constants; values are bound parameters
        f" {_turns(where)} AND char_length(b.transcript) > 0"
        f" AND char_length(b.transcript) + 1 + char_length(t.transcript) <= {EMBED_WINDOW_CHARS}"
        " AND NOT EXISTS (SELECT 1 FROM episode_windows w WHERE w.episode_id = t.id AND w.read_episode_id = b.id)"
        " ORDER BY t.id"
    )


#: Of ``%(ids)s`` and the turns right after each: those to embed after the turn before them.
_TO_READ: Final = _unread(f"t.project_id = %(p)s AND t.id IN (SELECT unnest(%(ids)s::text[]) UNION SELECT a.id {_TURNS})")

#: Every project's turns to embed after the turn before them (``memory-engine reembed``), by id.
UNREAD: Final = _unread("(%(after)s::text IS NULL OR t.id > %(after)s)") + " LIMIT %(n)s"

#: Each turn's window over the turn before it (``%(ids)s``, ``%(befores)s``, ``%(vectors)s``), where
#: that turn is still the one before it.
_STORE_READ: Final = (
    "INSERT INTO episode_windows (episode_id, window_index, project_id, memory_id, occurred_at, start_char, end_char,"  # noqa: S608 - module constants; values are bound parameters
    f" embedding, read_episode_id) SELECT t.id, {READ_BEFORE_WINDOW}, t.project_id, t.memory_id, t.occurred_at, 0,"
    " char_length(t.transcript), g.v::vector, b.id"
    " FROM unnest(%(ids)s::text[], %(befores)s::text[], %(vectors)s::text[]) AS g(id, before_id, v)"
    f" JOIN episodes t ON t.id = g.id {_BEFORE} WHERE t.project_id = %(p)s AND b.id = g.before_id"
    " ON CONFLICT (episode_id, window_index) DO NOTHING"
)


#: The last turn of a conversation (the ``_AT`` order), with its place.
_LAST: Final = (
    f"SELECT id, transcript, {_AT.format(a='e')} AS at FROM episodes e WHERE e.memory_id = %s AND e.conversation_id = %s"  # noqa: S608 - module constants; values are bound parameters
    f" ORDER BY {_AT.format(a='e')} DESC, e.id DESC LIMIT 1"
)


def joined(before: str | None, after: str | None) -> str | None:
    """A turn's context from the transcripts of the turns around it: what :data:`_CONTEXT` computes."""
    parts = [text[:CONTEXT_TURN_CHARS] for text in (before, after) if text is not None]
    return "\n".join(parts)[:MAX_CONTEXT_CHARS] or None


def appended(conn: psycopg.Connection[Any], episodes: Sequence[NewEpisode]) -> tuple[dict[str, str | None], str | None] | None:
    """When ``episodes`` (their ids given) are turns of one conversation that all come after its last
    stored turn, as a conversation is usually recorded: each one's context, written with its row
    (so a row is not written twice), and the id of that last turn, which gains the first of them as
    the turn after it; None otherwise (the caller then refreshes the turns once they are stored)."""
    if not episodes or len({(e.memory_id, e.conversation_id) for e in episodes}) != 1:
        return None
    if any(e.id is None or e.conversation_id is None or e.memory_id is None or e.occurred_at is None for e in episodes):
        return None
    batch = sorted(episodes, key=lambda e: (e.occurred_at, e.id or ""))
    last = conn.execute(_LAST, (batch[0].memory_id, batch[0].conversation_id)).fetchone()
    if last is not None and (last["at"], last["id"]) >= (batch[0].occurred_at, batch[0].id):
        return None
    contexts = {}
    for i, episode in enumerate(batch):
        before = batch[i - 1].transcript if i else (last["transcript"] if last is not None else None)
        contexts[episode.id or ""] = joined(before, batch[i + 1].transcript if i + 1 < len(batch) else None)
    return contexts, (str(last["id"]) if last is not None else None)


def around(conn: psycopg.Connection[Any], project_id: str, episode_ids: Sequence[str]) -> list[str]:
    """The turns right before and after each of ``episode_ids`` in its conversation."""
    if not episode_ids:
        return []
    rows = conn.execute(_AROUND, {"p": project_id, "ids": list(episode_ids)}).fetchall()
    found = {str(r[key]) for r in rows for key in ("before_id", "after_id") if r[key] is not None}
    return sorted(found - set(episode_ids))


def refresh(conn: psycopg.Connection[Any], project_id: str, episode_ids: Sequence[str], *, neighbours: bool) -> None:
    """Each of ``episode_ids`` (and with ``neighbours``, the turns right before and after each)
    reads the turns around it now. With ``neighbours`` (turns stored among others), a turn whose
    turn before changed also loses its window over the old one; without (the turn before an appended
    batch, the turns around deleted ones), no turn's turn before changed but by a deletion, whose
    windows went with it."""
    targets = sorted({*episode_ids, *(around(conn, project_id, episode_ids) if neighbours else ())})
    if targets:
        conn.execute(_REFRESH, {"p": project_id, "ids": targets})
        if neighbours:
            conn.execute(_STALE_READS, {"p": project_id, "ids": targets})


def to_read(conn: psycopg.Connection[Any], project_id: str, episode_ids: Sequence[str]) -> list[TurnBefore]:
    """Of ``episode_ids`` and the turns right after each: the turns to embed after the turn before
    them (:data:`_TO_READ`)."""
    if not episode_ids:
        return []
    return [turn for _, turn in turns_before(conn.execute(_TO_READ, {"p": project_id, "ids": list(episode_ids)}).fetchall())]


def turns_before(rows: Sequence[Row]) -> list[tuple[str, TurnBefore]]:
    """``(project, turn)`` of rows read with :func:`_unread`."""
    out = []
    for row in rows:
        text = read_after(row["before"], row["transcript"])
        if text is not None:
            out.append((str(row["project_id"]), TurnBefore(str(row["id"]), str(row["before_id"]), text)))
    return out


def store_read(conn: psycopg.Connection[Any], project_id: str, windows: Sequence[tuple[TurnBefore, Vector]]) -> int:
    """Each turn's window over the turn before it, where that turn is still the one before it and the
    turn has no window over it yet (another request may have stored it meanwhile); a window over a
    turn no longer before it goes (under the memories' write locks, in ``conn``'s transaction). How
    many were stored."""
    ids = [turn.episode_id for turn, _ in windows]
    if not ids:
        return 0
    memories = conn.execute("SELECT DISTINCT memory_id FROM episodes WHERE project_id = %s AND id = ANY(%s::text[])"
                            " AND memory_id IS NOT NULL", (project_id, ids)).fetchall()
    lock_memories(conn, [str(r["memory_id"]) for r in memories])
    conn.execute(_STALE_READS, {"p": project_id, "ids": ids})
    return int(conn.execute(_STORE_READ, {"p": project_id, "ids": ids, "befores": [turn.before_id for turn, _ in windows],
                                          "vectors": [vector_text(vector) for _, vector in windows]}).rowcount)


def delete_turns(conn: psycopg.Connection[Any], project_id: str, where: str, params: dict[str, Any]) -> TurnsDeleted:
    """Deletes the project's episodes matching ``where`` (over ``episodes``, no alias; ``params`` its
    values, ``%(p)s`` the project); the turns that were around them read their neighbours again (and
    lose their windows over a deleted turn: ON DELETE CASCADE)."""
    ids = [str(r["id"]) for r in conn.execute(f"SELECT id FROM episodes WHERE project_id = %(p)s AND {where}",  # noqa: S608 - the caller's fixed clause; values are bound parameters
                                              {**params, "p": project_id}).fetchall()]
    if not ids:
        return TurnsDeleted(0)
    left = around(conn, project_id, ids)
    deleted = conn.execute("DELETE FROM episodes WHERE project_id = %s AND id = ANY(%s::text[])", (project_id, ids)).rowcount
    refresh(conn, project_id, left, neighbours=False)
    return TurnsDeleted(int(deleted), tuple(left))
