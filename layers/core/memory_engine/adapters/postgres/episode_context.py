"""An episode's ``context``: the transcripts of the turns around it in its conversation (migration
0013), BM25F's second field of the keyword signal, as a fact's context is.

It is derived, never sent: whenever turns are stored (a batch that comes after the conversation's
last turn gets its contexts with its rows, :func:`appended`; any other is refreshed once stored,
:func:`refresh`, with its neighbours) or deleted (:func:`delete_turns`: the turns that were around
them), the affected turns read their neighbours again, so a deleted turn's words never stay in
another turn. A turn's place is
``coalesce(occurred_at, created_at), id`` in its memory and conversation, the order the turns
endpoint lists them in (index ``episodes_turn_order_idx``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import psycopg

from memory_engine.domain.entries import CONTEXT_TURN_CHARS, MAX_CONTEXT_CHARS
from memory_engine.ports.episodes import NewEpisode

_AT = "coalesce({a}.occurred_at, {a}.created_at)"

#: The turn of ``t``'s conversation right before (``<``) or after (``>``) it, as ``name``.
_NEXT_TO = (
    "LEFT JOIN LATERAL (SELECT n.id, n.transcript FROM episodes n WHERE n.memory_id = t.memory_id"
    " AND n.conversation_id = t.conversation_id AND ({n_at}, n.id) {op} ({t_at}, t.id)"
    " ORDER BY {n_at} {order}, n.id {order} LIMIT 1) {name} ON true"
)
_BEFORE: Final = _NEXT_TO.format(n_at=_AT.format(a="n"), t_at=_AT.format(a="t"), op="<", order="DESC", name="b")
_AFTER: Final = _NEXT_TO.format(n_at=_AT.format(a="n"), t_at=_AT.format(a="t"), op=">", order="ASC", name="a")

#: The turns of a conversation among ``%(ids)s``, with the turns right before and after each.
_TURNS: Final = (
    f"FROM episodes t {_BEFORE} {_AFTER} WHERE t.project_id = %(p)s AND t.id = ANY(%(ids)s::text[])"
    " AND t.conversation_id IS NOT NULL AND t.memory_id IS NOT NULL"
)

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
    reads the turns around it now."""
    targets = sorted({*episode_ids, *(around(conn, project_id, episode_ids) if neighbours else ())})
    if targets:
        conn.execute(_REFRESH, {"p": project_id, "ids": targets})


def delete_turns(conn: psycopg.Connection[Any], project_id: str, where: str, params: dict[str, Any]) -> int:
    """Deletes the project's episodes matching ``where`` (over ``episodes``, no alias; ``params`` its
    values, ``%(p)s`` the project); the turns that were around them read their neighbours again."""
    ids = [str(r["id"]) for r in conn.execute(f"SELECT id FROM episodes WHERE project_id = %(p)s AND {where}",  # noqa: S608 - the caller's fixed clause; values are bound parameters
                                              {**params, "p": project_id}).fetchall()]
    if not ids:
        return 0
    left = around(conn, project_id, ids)
    deleted = conn.execute("DELETE FROM episodes WHERE project_id = %s AND id = ANY(%s::text[])", (project_id, ids)).rowcount
    refresh(conn, project_id, left, neighbours=False)
    return int(deleted)
