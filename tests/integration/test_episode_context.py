"""An episode's context (the transcripts of the turns around it, migration 0013) is derived: however
turns are recorded (appended in order, out of order, a retried batch, several conversations) or
deleted, every turn's stored context is the one its neighbours give it now."""

from __future__ import annotations

from typing import Any

import psycopg

from memory_engine.bootstrap import Container
from tests.support.api_client import ApiClient

#: Every turn's context as its neighbours give it now (the migration's backfill, over one memory).
RECOMPUTED = (
    "SELECT id, nullif(left(concat_ws(E'\\n', left(lag(transcript) OVER w, 1000), left(lead(transcript) OVER w, 1000)),"
    " 2000), '') AS context FROM episodes WHERE memory_id = %s"
    " WINDOW w AS (PARTITION BY memory_id, conversation_id ORDER BY coalesce(occurred_at, created_at), id)"
)


def _contexts(container: Container, memory_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    with psycopg.connect(container.settings.database_url or "") as conn:
        stored = dict(conn.execute("SELECT id, context FROM episodes WHERE memory_id = %s", (memory_id,)).fetchall())
        recomputed = dict(conn.execute(RECOMPUTED, (memory_id,)).fetchall())
    return stored, recomputed


def _record(api: ApiClient, memory_id: str, conversation: str, turns: list[tuple[str, str, str | None]]) -> None:
    body = {"conversation_id": conversation, "turns": [
        {"turn_id": turn_id, "role": "user", "content": content, **({"occurred_at": at} if at else {})}
        for turn_id, content, at in turns]}
    response = api.post(f"/v1/memories/{memory_id}/turns", body)
    assert response.status == 201, response.json


def test_every_turn_reads_the_turns_around_it_however_turns_come(api: ApiClient, container: Container) -> None:
    memory = str(api.post("/v1/memories", {"name": "contexts"}).json["id"])
    day = "2024-05-0{}T10:00:00Z"
    steps = [
        ("c1", [("a", "first words", day.format(1)), ("b", "second words", day.format(2))]),  # a new conversation
        ("c1", [("c", "third words", day.format(3)), ("d", "fourth words", day.format(4))]),  # appended
        ("c1", [("x", "said in between", "2024-05-02T12:00:00Z")]),  # between two stored turns
        ("c1", [("c", "third words", day.format(3)), ("e", "fifth words", day.format(5))]),  # a retry with a new one
        ("c2", [("a", "another conversation", day.format(1))]),  # its own neighbours only
        ("c1", [("f", "no time given", None), ("g", "sent with it", None)]),  # the server's time, in order
        ("c1", [("h", "before everything", "2024-04-30T10:00:00Z"), ("i", "and the last", day.format(9))]),
    ]
    for conversation, turns in steps:
        _record(api, memory, conversation, turns)
        stored, recomputed = _contexts(container, memory)
        assert stored == recomputed, (conversation, turns)
    assert len(stored) == 11 and sum(1 for c in stored.values() if c) == 10  # c2's one turn has none
    # deleting turns (the first, one in the middle, the last) leaves every context as its neighbours give it
    for turn_id in ("h", "c", "i"):
        assert api.delete(f"/v1/memories/{memory}/turns/{turn_id}", params={"conversation_id": "c1"}).status == 204
        stored, recomputed = _contexts(container, memory)
        assert stored == recomputed, turn_id
