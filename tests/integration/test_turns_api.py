"""/v1/memories/{memory_id}/turns: turns recorded over HTTP as the memory's episodes, listed in
order with pages, deleted one by one or by conversation, idempotent by turn_id, and with
``extract: true`` extracted once by the same consumer a ``turn.completed`` event goes to."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.turns import MAX_TURN_BYTES
from memory_engine.ports.chat import ChatModel
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient
from tests.support.extraction import ScriptedChatModel, turn_event


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    return ScriptedChatModel()


@pytest.fixture(scope="module", autouse=True)
def _stop_the_local_queue(container: Container) -> Iterator[None]:
    yield
    container.event_queue.drain(timeout=30)
    container.event_queue.stop()


@pytest.fixture
def memory_id(api: ApiClient) -> str:
    return str(api.post("/v1/memories", {"name": "turns"}).json["id"])


def _turns(api: ApiClient, memory_id: str, conversation_id: str, **params: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {"conversation_id": conversation_id, **params, **({"cursor": cursor} if cursor else {})}
        page = api.get(f"/v1/memories/{memory_id}/turns", params=query)
        assert page.status == 200, page.json
        out += page.json["data"]
        cursor = page.json["next_cursor"]
        if cursor is None:
            return out


def test_turns_come_back_in_the_order_sent_with_their_metadata_across_pages(api: ApiClient, memory_id: str) -> None:
    # Given 7 turns sent in two requests, the first five said at the same moment (no occurred_at)
    sent = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}",
             **({"metadata": {"n": i, "item": {"type": "message"}}} if i % 3 == 0 else {})} for i in range(5)]
    first = api.post(f"/v1/memories/{memory_id}/turns", {"conversation_id": "c-1", "turns": sent})
    assert first.status == 201, first.json
    assert first.json["extraction"] == "not_requested"
    assert [t["created"] for t in first.json["turns"]] == [True] * 5
    more = [{"turn_id": "t-5", "role": "tool", "content": '{"result": 42}'},
            {"turn_id": "t-6", "role": "system", "content": "be brief"}]
    assert api.post(f"/v1/memories/{memory_id}/turns", {"conversation_id": "c-1", "turns": more}).status == 201
    api.post(f"/v1/memories/{memory_id}/turns", {"conversation_id": "c-2", "turns": [{"role": "user", "content": "x"}]})

    # When the conversation is read two turns a page, oldest first and newest first
    listed = _turns(api, memory_id, "c-1", limit=2)
    newest = _turns(api, memory_id, "c-1", limit=3, order="desc")

    # Then every turn comes back exactly, in the order sent, the server's turn ids included
    assert [(t["role"], t["content"], t["metadata"]) for t in listed] == [
        (t["role"], t["content"], t.get("metadata")) for t in sent + more]
    assert [t["turn_id"] for t in listed[:5]] == [t["turn_id"] for t in first.json["turns"]]
    assert [t["turn_id"] for t in listed[5:]] == ["t-5", "t-6"]
    assert {t["conversation_id"] for t in listed} == {"c-1"} and {t["memory_id"] for t in listed} == {memory_id}
    assert newest == listed[::-1]


def test_the_same_turn_id_sent_twice_is_stored_once(api: ApiClient, memory_id: str, container: Container) -> None:
    body = {"conversation_id": "c-1", "turns": [{"turn_id": "t-1", "role": "user", "content": "I like tea."}]}
    first = api.post(f"/v1/memories/{memory_id}/turns", body).json["turns"][0]
    again = api.post(f"/v1/memories/{memory_id}/turns", {**body, "turns": [{**body["turns"][0], "content": "changed"}]})
    assert again.status == 201 and again.json["turns"][0] == {**first, "created": False}
    assert [t["content"] for t in _turns(api, memory_id, "c-1")] == ["I like tea."]
    # the same turn id in another conversation is another turn
    other = api.post(f"/v1/memories/{memory_id}/turns", {**body, "conversation_id": "c-2"}).json["turns"][0]
    assert other["created"] and other["id"] != first["id"]
    # and it is an episode like any other: embedded, found by episode search
    found = api.post("/v1/knowledge/search", {"query": "tea", "memory_ids": [memory_id], "include": ["episodes"]}).json
    assert first["id"] in {e["id"] for e in found.get("episodes", [])}, found


def test_delete_one_turn_and_a_whole_conversation(api: ApiClient, memory_id: str) -> None:
    turns = [{"turn_id": f"t-{i}", "role": "user", "content": f"turn {i}"} for i in range(3)]
    for conversation in ("c-1", "c-2"):
        api.post(f"/v1/memories/{memory_id}/turns", {"conversation_id": conversation, "turns": turns})

    assert api.delete(f"/v1/memories/{memory_id}/turns/t-1", params={"conversation_id": "c-1"}).status == 204
    assert [t["turn_id"] for t in _turns(api, memory_id, "c-1")] == ["t-0", "t-2"]
    assert len(_turns(api, memory_id, "c-2")) == 3
    assert api.delete(f"/v1/memories/{memory_id}/turns/t-1", params={"conversation_id": "c-1"}).status == 404

    assert api.delete(f"/v1/memories/{memory_id}/turns", params={"conversation_id": "c-2"}).status == 204
    assert _turns(api, memory_id, "c-2") == [] and len(_turns(api, memory_id, "c-1")) == 2
    assert api.delete(f"/v1/memories/{memory_id}/turns", params={"conversation_id": "c-2"}).status == 204


def test_bad_input_is_a_clear_4xx(api: ApiClient, memory_id: str, make_key: KeyFactory) -> None:
    url = f"/v1/memories/{memory_id}/turns"
    assert api.post(url, {"conversation_id": "c", "turns": []}).status == 422
    assert api.post(url, {"conversation_id": "c", "turns": [{"role": "robot", "content": "x"}]}).status == 422
    assert api.post(url, {"conversation_id": "c", "turns": [{"role": "user", "content": "  "}]}).status == 422
    assert api.post(url, {"conversation_id": "", "turns": [{"role": "user", "content": "x"}]}).status == 422
    assert api.post(url, {"conversation_id": "c", "turns": [{"role": "user", "content": "x", "extra": 1}]}).status == 422
    big = api.post(url, {"conversation_id": "c", "turns": [{"role": "user", "content": "é" * (MAX_TURN_BYTES // 2 + 1)}]})
    assert big.status == 413 and big.json["error"]["details"][0]["field"] == "turns.0.content"
    # a turn of exactly 1 MB is stored whole
    whole = "a" * MAX_TURN_BYTES
    assert api.post(url, {"conversation_id": "big", "turns": [{"role": "user", "content": whole}]}).status == 201
    assert _turns(api, memory_id, "big")[0]["content"] == whole
    assert api.get(url, params={"conversation_id": "c", "cursor": "nope"}).status == 422
    assert api.get(url).status == 422  # conversation_id is required
    assert api.post("/v1/memories/mem_unknown/turns", {"conversation_id": "c", "turns": [
        {"role": "user", "content": "x"}]}).status == 404
    read_only = ApiClient(make_key("acme", "read"))
    assert read_only.post(url, {"conversation_id": "c", "turns": [{"role": "user", "content": "x"}]}).status == 403
    assert read_only.delete(url, params={"conversation_id": "c"}).status == 403
    assert read_only.get(url, params={"conversation_id": "c"}).status == 200
    assert _turns(api, memory_id, "c") == []


def _run(api: ApiClient, event_id: str) -> dict[str, Any]:
    for _ in range(600):  # the local consumer is a thread: wait for the run to finish, not for a time
        runs = api.get("/v1/extraction-runs", params={"event_id": event_id}).json["data"]
        if runs and runs[0]["status"] != "running":
            return dict(runs[0])
        time.sleep(0.05)
    raise AssertionError(f"no finished run for {event_id}")


def test_extract_queues_each_new_conversational_turn_once(api: ApiClient, memory_id: str, container: Container) -> None:
    chat = container.chat_model
    assert isinstance(chat, ScriptedChatModel)
    fact = {"content": "Sam works at Acme as a nurse.", "subject": "Sam", "predicate": "works at", "object": "Acme"}
    chat.script(json.dumps([fact]))
    body = {"conversation_id": "c-x", "extract": True, "turns": [
        {"turn_id": "u1", "role": "user", "content": "I work at Acme as a nurse."},
        {"turn_id": "s1", "role": "system", "content": "You are helpful."}]}

    recorded = api.post(f"/v1/memories/{memory_id}/turns", body)

    assert recorded.status == 201 and recorded.json["extraction"] == "queued", recorded.json
    [event_id] = recorded.json["extraction_event_ids"]  # the system turn is not mined for facts
    run = _run(api, event_id)
    assert run["status"] == "completed" and run["episode_id"] == recorded.json["turns"][0]["id"], run
    entries = api.get("/v1/memory-entries", params={"memory_id": memory_id}).json["data"]
    assert [(e["content"], e["source_conversation_id"], e["source_generation_id"]) for e in entries] == [
        ("Sam works at Acme as a nurse.", "c-x", "u1")]
    assert "I work at Acme as a nurse." in chat.extraction_calls[0].user
    # sent again: nothing new is stored or queued, and no second model call
    again = api.post(f"/v1/memories/{memory_id}/turns", body).json
    assert again["extraction_event_ids"] == [] and len(chat.extraction_calls) == 1
    assert len(_turns(api, memory_id, "c-x")) == 2


def test_episodes_of_turn_completed_events_are_listed_too(api: ApiClient, memory_id: str, container: Container) -> None:
    project_id = container.memories.get(
        container.projects.get_or_create_project("acme").id, memory_id).project_id
    event = turn_event(project_id=project_id, memory_id=memory_id, conversation_id="c-ev", extract=False)
    assert api.post("/v1/events", event, params={"wait": "true"}).status == 200
    [turn] = _turns(api, memory_id, "c-ev")
    assert turn["role"] is None and turn["content"].startswith("user: Hi! I moved to Lisbon")
    assert [m["role"] for m in turn["messages"]] == ["user", "assistant"]
