"""A recorded turn that fits in one model window with the turn before it also has a vector window
over the two (migration 0014, ``domain.turns.read_after``): "Half past nine." alone means nothing.
The window is derived: however turns come (appended, out of order, retried, imported, through a
model that was down) or go (a turn deleted, an entity forgotten), every turn's window is over the
turn before it now, its vector that pair's, and no window keeps a deleted turn's words."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import psycopg

from memory_engine.adapters.postgres.embedding_repair import PostgresEmbeddingRepair
from memory_engine.bootstrap import Container
from memory_engine.domain.turns import READ_BEFORE_WINDOW, TurnInput, TurnsRequest, read_after
from memory_engine.ports.embedder import Embedder
from memory_engine.ports.episodes import TurnBefore
from memory_engine.services.reembed import reembed_missing
from memory_engine.services.turns import TurnPorts, record_turns
from tests.conftest import KeyFactory
from tests.integration.test_episode_context import _record
from tests.support.api_client import ApiClient
from tests.support.memories import FailingEmbedder

#: Each turn with the turn before it in its conversation now.
_PAIRS = (
    "SELECT id, lag(id) OVER w AS before_id, lag(transcript) OVER w AS before, transcript FROM episodes"
    " WHERE memory_id = %s WINDOW w AS (PARTITION BY memory_id, conversation_id"
    " ORDER BY coalesce(occurred_at, created_at), id)"
)


def _read_windows(container: Container, memory_id: str) -> tuple[dict[str, tuple[str, Any]], dict[str, tuple[str, str]]]:
    """(stored: turn -> (the turn its window read, vector), expected: turn -> (the turn before it, text))."""
    with psycopg.connect(container.settings.database_url or "") as conn:
        stored = {row[0]: (row[1], np.asarray(json.loads(row[2]), dtype=np.float32)) for row in conn.execute(
            "SELECT w.episode_id, w.read_episode_id, w.embedding::text FROM episode_windows w"
            " JOIN episodes e ON e.id = w.episode_id WHERE e.memory_id = %s AND w.read_episode_id IS NOT NULL"
            " AND w.window_index = %s", (memory_id, READ_BEFORE_WINDOW)).fetchall()}
        pairs = conn.execute(_PAIRS, (memory_id,)).fetchall()
    expected = {}
    for turn, before_id, before, transcript in pairs:
        text = read_after(before, transcript) if before is not None else None
        if text is not None:
            expected[turn] = (before_id, text)
    return stored, expected


def _assert_current(container: Container, embedder: Embedder, memory_id: str, step: object = None) -> int:
    """Every turn's window is over the turn before it now, with that pair's vector; how many have one."""
    stored, expected = _read_windows(container, memory_id)
    assert {k: v[0] for k, v in stored.items()} == {k: v[0] for k, v in expected.items()}, step
    if expected:
        vectors = embedder.embed_documents([text for _, text in expected.values()])
        for turn, vector in zip(expected, vectors, strict=True):
            assert float(np.dot(stored[turn][1], np.asarray(vector))) > 0.999, (step, turn)
    return len(expected)


def test_every_turn_reads_the_turn_before_it_however_turns_come_and_go(api: ApiClient, container: Container) -> None:
    memory = str(api.post("/v1/memories", {"name": "read windows"}).json["id"])
    day = "2024-05-0{}T10:00:00Z"
    long_turn = "A long answer about the deployment. " * 30  # over the window with any turn before it
    steps = [
        ("c1", [("a", "first words", day.format(1)), ("b", "second words", day.format(2))]),  # a new conversation
        ("c1", [("c", "third words", day.format(3)), ("d", "fourth words", day.format(4))]),  # appended
        ("c1", [("x", "said in between by Priya", "2024-05-02T12:00:00Z")]),  # c now reads x, not b
        ("c1", [("c", "third words", day.format(3)), ("e", long_turn, day.format(5))]),  # a retry; a long turn
        ("c1", [("f", "short after the long one", day.format(6))]),  # the pair does not fit: none
        ("c2", [("a", "another conversation", day.format(1))]),  # its own turn before: none
        ("c1", [("h", "before everything", "2024-04-30T10:00:00Z")]),  # a becomes the turn after it
    ]
    for conversation, turns in steps:
        _record(api, memory, conversation, turns)
        count = _assert_current(container, container.embedder, memory, (conversation, turns))
    assert count == 5  # a (after h), b, x, c, d; not h, e, f, c2's a
    # deleting turns: the turn after each reads its new turn before, and no window holds a deleted turn
    for turn_id in ("x", "a"):
        assert api.delete(f"/v1/memories/{memory}/turns/{turn_id}", params={"conversation_id": "c1"}).status == 204
        _assert_current(container, container.embedder, memory, turn_id)
    # forgetting an entity deletes the turns that name it; the turns after them read their new turn before
    _record(api, memory, "c1", [("y", "Priya said it again", "2024-05-02T13:00:00Z")])
    assert api.post("/v1/memory-entries", {"memory_id": memory, "content": "Priya leads the team.",
                                           "entities": [{"name": "Priya"}]}).status == 201
    forgotten = api.post("/v1/forget", {"memory_id": memory, "entity": "Priya"})
    assert forgotten.status == 200 and forgotten.json["deleted"]["episodes"] == 1, forgotten.json
    assert _assert_current(container, container.embedder, memory, "forget") == 3  # b (after h), c, d


def test_a_short_reply_is_found_by_meaning_through_what_it_answers(api: ApiClient, container: Container) -> None:
    memory = str(api.post("/v1/memories", {"name": "short replies"}).json["id"])
    _record(api, memory, "c", [("q", "What time is my dentist appointment on Friday?", None),
                               ("r", "Half past nine, do not be late.", None)])
    query = "when do I see the dentist"
    results = api.post("/v1/knowledge/search", {"query": query, "memory_ids": [memory], "include": ["episodes"],
                                                "signals": ["vector"], "min_score": 0}).json["results"]
    reply = next(r for r in results if r["turn_id"] == "r")
    # its own words alone are far from the question; read after the question they are near it
    q = np.asarray(container.embedder.embed_query(query))
    own, pair = (np.asarray(v) for v in container.embedder.embed_documents(
        ["user: Half past nine, do not be late.",
         "user: What time is my dentist appointment on Friday?\nuser: Half past nine, do not be late."]))
    assert float(q @ pair) > float(q @ own) + 0.1
    assert abs(reply["similarity_score"] - float(q @ pair)) < 1e-3, reply
    assert reply["content"] == "user: Half past nine, do not be late."  # the passage shown is its own


def test_turns_stored_while_the_model_was_down_get_their_window_from_a_retry_or_reembed(
        api: ApiClient, container: Container) -> None:
    retried, left = _memory(api), _memory(api)
    project_id = str(api.get(f"/v1/memories/{retried}").json["project_id"])
    request = TurnsRequest(conversation_id="c", turns=[
        TurnInput(turn_id="1", role="user", content="Is the lake frozen yet?"),
        TurnInput(turn_id="2", role="assistant", content="Not until January.")])
    down = TurnPorts(memories=container.memories, episodes=container.episodes, embedder=FailingEmbedder(), queue=None)
    up = TurnPorts(memories=container.memories, episodes=container.episodes, embedder=container.embedder, queue=None)
    repair = PostgresEmbeddingRepair(container.database)
    # the same request sent again once the model answers: the turns are stored, their windows are completed
    record_turns(down, project_id, retried, request)
    assert _read_windows(container, retried)[0] == {}
    assert [t.created for t in record_turns(up, project_id, retried, request).turns] == [False, False]
    assert _assert_current(container, container.embedder, retried) == 1
    # left as they were, memory-engine reembed gives them their own windows and the one over the turn before
    record_turns(down, project_id, left, request)
    stored, expected = _read_windows(container, left)
    assert stored == {} and len(expected) == 1 and repair.count_unread() >= 1
    repaired = reembed_missing(repair, container.embedder, tables=["episodes"])
    assert repaired["episodes"] >= 3  # two turns' own windows (and the retried ones'), one window over the turn before
    assert _assert_current(container, container.embedder, left) == 1
    assert repair.count_unread() == 0


def _memory(api: ApiClient) -> str:
    return str(api.post("/v1/memories", {"name": "model down"}).json["id"])


def test_an_imported_conversation_reads_the_turns_before_its_turns(
        api: ApiClient, container: Container, make_key: KeyFactory) -> None:
    memory = str(api.post("/v1/memories", {"name": "to export"}).json["id"])
    _record(api, memory, "c", [("1", "Where did we park?", None), ("2", "Level three, row B.", None),
                               ("3", "Thanks!", None)])
    exported = api.get(f"/v1/memories/{memory}/export")
    other = ApiClient(make_key("import-read-windows", "read,write"))
    imported = other.request("POST", "/v1/memories/import", body=exported.body,
                             headers={"content-type": "application/x-ndjson"})
    assert imported.status == 201, imported.json
    assert _assert_current(container, container.embedder, imported.json["memory"]["id"]) == 2


def test_a_late_or_stale_write_never_undoes_a_current_window(api: ApiClient, container: Container) -> None:
    # Given two turns, the second with its window over the first
    memory = str(api.post("/v1/memories", {"name": "late writes"}).json["id"])
    project_id = str(api.get(f"/v1/memories/{memory}").json["project_id"])
    _record(api, memory, "c", [("1", "Where is the spare key?", None), ("2", "Under the blue flower pot.", None)])
    before, _ = _read_windows(container, memory)
    (second, (first, vector)), = before.items()
    noise = np.asarray(container.embedder.embed_documents(["something else entirely"])[0])
    # When a request that read another turn before it (since deleted or moved), or one that read the same
    # turn but comes second, stores its window
    stale = TurnBefore(second, "epi_not_the_turn_before", "user: x\nuser: y")
    late = TurnBefore(second, first, "user: x\nuser: y")
    assert container.episodes.store_read_windows(project_id, [(stale, noise), (late, noise)]) == 0
    # Then the window stored first stands, as it was
    after, _ = _read_windows(container, memory)
    assert after.keys() == {second} and after[second][0] == first
    assert float(np.dot(after[second][1], vector)) > 0.999
