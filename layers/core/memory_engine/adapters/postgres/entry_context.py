"""A conversation turn's text is stored in its neighbours too, and must leave with it.

A turn written with ``source_conversation_id`` keeps the turn before it as its ``context`` (searched
by keyword as BM25F's second field, and read by its vector), and that turn's context gains it in
turn (``entry_writes.extend_context``). So a deleted turn's words stayed in the ``context`` of the
turns around it, which ``GET`` returns, keyword search finds, and exports carry, and in the vector of
the turn after it. When turns are deleted (:func:`delete_entries`: one entry, a batch, forgetting an
entity), every remaining row of their conversations whose context holds one of their lines gets
its context again as a write would give it now (the line of the live turn before it and of the
one after it, :func:`memory_engine.domain.entries.turn_text`; a row no longer live only loses the
lines), and a row whose vector read one (its context opened with it: it was the turn right after)
has that vector cleared, to be embedded again (:data:`memory_engine.ports.entries.Deletion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import psycopg

from memory_engine.adapters.postgres.database import Row
from memory_engine.adapters.postgres.entry_sql import not_expired
from memory_engine.domain.entries import MAX_CONTEXT_CHARS, turn_text
from memory_engine.ports.entries import Deletion

#: What a deleted entry's row gives back (``DELETE ... RETURNING``): where it stood and its line.
GONE: Final = "id, memory_id, source_conversation_id, source_type, subject, content"

#: The live turn of ``r``'s conversation right before (``<``) or after (``>``) it, as a write reads
#: the turn before it (``entry_writes.previous_turn``).
_NEXT_TO = (
    "LEFT JOIN LATERAL (SELECT n.subject, n.content FROM memory_entries n WHERE n.project_id = r.project_id"  # noqa: S608 - fixed fragments; values are bound parameters
    " AND n.memory_id = r.memory_id AND n.source_conversation_id = r.source_conversation_id"
    f" AND n.invalidated_at IS NULL AND {not_expired('n')} AND (n.created_at, n.id) {{op}} (r.created_at, r.id)"
    " ORDER BY n.created_at {order}, n.id {order} LIMIT 1) {name} ON true"
)

#: The rows of the deleted turns' conversations whose context holds one of their lines, with the
#: live turns around them.
_HOLDING = (
    "SELECT r.id, r.context, (r.invalidated_at IS NULL AND " + not_expired("r") + ") AS live,"  # noqa: S608 - fixed fragments; values are bound parameters
    " b.subject AS before_subject, b.content AS before_content, a.subject AS after_subject, a.content AS after_content"
    " FROM memory_entries r "
    + _NEXT_TO.format(op="<", order="DESC", name="b") + " "
    + _NEXT_TO.format(op=">", order="ASC", name="a")
    + " WHERE r.project_id = %(p)s"
    " AND (r.memory_id, r.source_conversation_id) IN (SELECT * FROM unnest(%(m)s::text[], %(c)s::text[]))"
    " AND r.context IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(%(lines)s::text[]) l WHERE strpos(r.context, l) > 0)"
)

_REWRITE = (
    "UPDATE memory_entries e SET context = v.context,"
    " embedding = CASE WHEN v.clear THEN NULL ELSE e.embedding END,"
    " own_embedding = CASE WHEN v.clear THEN NULL ELSE e.own_embedding END"
    " FROM unnest(%(ids)s::text[], %(contexts)s::text[], %(clear)s::bool[]) AS v(id, context, clear)"
    " WHERE e.id = v.id AND e.project_id = %(p)s"
)


def lock_memories(conn: psycopg.Connection[Any], memory_ids: Sequence[str]) -> None:
    """The write locks of ``memory_ids`` (those a write takes, ``entry_writes.lock_memory``), in a
    fixed order so two deletions cannot deadlock, until ``conn``'s transaction ends."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(h) FROM (SELECT hashtextextended(id, 0) AS h FROM unnest(%s::text[]) AS m(id)"
        " ORDER BY id) locks", (sorted(set(memory_ids)),),
    ).fetchall()


def delete_entries(conn: psycopg.Connection[Any], project_id: str, entry_ids: Sequence[str], *,
                   whole_conversations: bool = False) -> Deletion:
    """Deletes the project's entries among ``entry_ids`` and takes their words out of the rows
    around them (the module docstring), in ``conn``'s transaction, under their memories' write
    locks (a turn written meanwhile cannot read a deleted one as the turn before it).
    ``whole_conversations``: the caller deletes every entry of their conversations (a purge, a
    forgotten conversation) under those locks already, so no row is left to hold their words."""
    if not entry_ids:
        return Deletion()
    if whole_conversations:
        gone = conn.execute("DELETE FROM memory_entries WHERE project_id = %s AND id = ANY(%s::text[]) RETURNING id",
                            (project_id, list(entry_ids))).fetchall()
        return Deletion(frozenset(str(r["id"]) for r in gone))
    lock_memories(conn, [str(r["memory_id"]) for r in conn.execute(
        "SELECT DISTINCT memory_id FROM memory_entries WHERE project_id = %s AND id = ANY(%s::text[])"
        " AND memory_id IS NOT NULL", (project_id, list(entry_ids))).fetchall()])
    gone = conn.execute(
        f"DELETE FROM memory_entries WHERE project_id = %s AND id = ANY(%s::text[]) RETURNING {GONE}",  # noqa: S608 - a fixed column list; values are bound parameters
        (project_id, list(entry_ids)),
    ).fetchall()
    return Deletion(frozenset(str(r["id"]) for r in gone), tuple(forget_lines(conn, project_id, gone)))


def forget_lines(conn: psycopg.Connection[Any], project_id: str, gone: Sequence[Row]) -> list[str]:
    """Rewrites the contexts that hold a line of the ``gone`` turns (rows of :data:`GONE`; their lines as they were); returns
    the ids whose vector was cleared because it read one."""
    # any entry of a conversation: a turn reads the conversation's latest live entry as the one
    # before it, an extracted fact included (entry_writes.previous_turn)
    turns = [g for g in gone if g["source_conversation_id"] is not None]
    if not turns:
        return []
    lines = sorted({turn_text(g["subject"], g["content"]) for g in turns})
    places = sorted({(str(g["memory_id"]), str(g["source_conversation_id"])) for g in turns})
    holding = conn.execute(_HOLDING, {"p": project_id, "m": [m for m, _ in places], "c": [c for _, c in places],
                                      "lines": lines}).fetchall()
    ids, contexts, clear = [], [], []
    for row in holding:
        ids.append(str(row["id"]))
        contexts.append(_context_now(row, lines))
        clear.append(any(str(row["context"]).startswith(line) for line in lines))
    if ids:
        conn.execute(_REWRITE, {"p": project_id, "ids": ids, "contexts": contexts, "clear": clear})
    return [row_id for row_id, cleared in zip(ids, clear, strict=True) if cleared]


def _context_now(row: Row, lines: Sequence[str]) -> str | None:
    """A live row's context as a write would give it now (the turns before and after it); a row
    no longer live keeps its context without the ``lines``."""
    if row["live"]:
        parts = [turn_text(row[f"{side}_subject"], row[f"{side}_content"]) for side in ("before", "after")
                 if row[f"{side}_content"] is not None]
    else:
        parts = [part for part in str(row["context"]).split("\n") if part and part not in lines]
    return "\n".join(parts)[:MAX_CONTEXT_CHARS] or None
