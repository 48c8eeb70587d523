"""The agent write path (`POST /v1/memory-entries` with `source_type: "agent"`) on the real database,
the real embedding model and a scripted chat model: it merges and supersedes as extraction does; a
manual write of the same facts never does; with no chat model it writes as a manual write and says so."""

from __future__ import annotations

import json

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.entries import NewEntry
from memory_engine.domain.write_decision import AgentContext
from memory_engine.ports.chat import ChatModel, NoChatModel
from memory_engine.services.write_entry import MERGE_MODEL_FAILED, MERGE_NO_MODEL, write_entry
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient
from tests.support.memories import ALLERGY, ALLERGY_MORE, BLUE, GREEN, ScriptedChat, write


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    return ScriptedChat()


@pytest.fixture
def chat(container: Container) -> ScriptedChat:
    model = container.chat_model
    assert isinstance(model, ScriptedChat)
    return model


@pytest.fixture
def memory_id(api: ApiClient) -> str:
    response = api.post("/v1/memories", {"name": "agent-path"})
    assert response.status == 201
    return str(response.json["id"])


def _agent_write(api: ApiClient, memory_id: str, content: str, generation: str, **extra: object) -> tuple[int, dict]:
    response = api.post("/v1/memory-entries", {
        "memory_id": memory_id, "content": content, "source_type": "agent",
        "agent": {"generation_id": generation, "model": "judge-1"}, **extra,
    })
    return response.status, response.json


def test_an_agent_write_merges_a_similar_fact_and_keeps_the_first_provenance(
    api: ApiClient, memory_id: str, chat: ScriptedChat
) -> None:
    # Given a fact an agent wrote during generation gen-1
    chat.script(json.dumps({"decision": "distinct"}))
    status, first = _agent_write(api, memory_id, ALLERGY, "gen-1", tags=["health"])
    assert status == 201 and first["action"] == "created" and first["source_type"] == "agent"
    assert first["source_generation_id"] == "gen-1" and "degraded" not in first

    # When another generation writes a similar fact and the model merges them
    merged = "The user is allergic to peanuts and shellfish."
    chat.script(json.dumps({"decision": "merge", "content": merged, "reason": "adds shellfish"}))
    status, second = _agent_write(api, memory_id, ALLERGY_MORE, "gen-2", tags=["allergy"])

    # Then the one entry absorbed it: same id, merged content, tags unioned, provenance of gen-1 kept
    assert status == 200 and second["action"] == "updated"
    assert second["id"] == first["id"] and second["content"] == merged
    assert second["tags"] == ["health", "allergy"] and second["source_generation_id"] == "gen-1"
    assert chat.calls and chat.calls[0]["model"] == "judge-1"
    listed = api.get("/v1/memory-entries", params={"memory_id": memory_id}).json["data"]
    assert [e["content"] for e in listed] == [merged]


def test_an_agent_write_supersedes_a_contradicted_fact(api: ApiClient, memory_id: str, chat: ScriptedChat) -> None:
    # Given a stored fact
    chat.script(json.dumps({"decision": "distinct"}))
    _, old = _agent_write(api, memory_id, BLUE, "gen-1")

    # When an agent writes a contradicting one and the model judges a contradiction
    chat.script(json.dumps({"decision": "supersede", "reason": "favourite colour changed"}))
    status, new = _agent_write(api, memory_id, GREEN, "gen-2")

    # Then the new fact is created with its own provenance and the old one is retired, readable for audit
    assert status == 200 and new["action"] == "superseded" and new["superseded_entry_id"] == old["id"]
    assert new["content"] == GREEN and new["source_generation_id"] == "gen-2"
    audit = api.get(f"/v1/memory-entries/{old['id']}").json
    assert audit["superseded_by_entry_id"] == new["id"] and audit["invalidation_reason"] == "favourite colour changed"
    live = api.get("/v1/memory-entries", params={"memory_id": memory_id}).json["data"]
    assert [e["content"] for e in live] == [GREEN]


def test_a_manual_write_of_the_same_facts_never_merges(api: ApiClient, memory_id: str, chat: ScriptedChat) -> None:
    # Given a model that would merge anything
    chat.script(json.dumps({"decision": "merge", "content": "merged", "reason": "same"}))

    # When the same two facts are written manually
    first = api.post("/v1/memory-entries", {"memory_id": memory_id, "content": ALLERGY})
    second = api.post("/v1/memory-entries", {"memory_id": memory_id, "content": ALLERGY_MORE, "source_type": "manual"})

    # Then both are created and the model is never asked
    assert (first.status, second.status) == (201, 201)
    assert second.json["action"] == "created" and second.json["id"] != first.json["id"]
    assert chat.calls == []


def test_a_failing_model_creates_and_says_so(api: ApiClient, memory_id: str, chat: ScriptedChat) -> None:
    chat.script(json.dumps({"decision": "distinct"}))
    _agent_write(api, memory_id, BLUE, "gen-1")
    chat.script("I cannot decide.")
    status, body = _agent_write(api, memory_id, GREEN, "gen-2")
    assert status == 201 and body["action"] == "created" and body["degraded"] == [MERGE_MODEL_FAILED]


def test_without_a_chat_model_an_agent_write_is_a_manual_write_that_says_so(container: Container, memory_id: str) -> None:
    # Given no chat model configured
    project_id = container.projects.get_or_create_project("acme").id
    write(container, project_id=project_id, entry=NewEntry(memory_id=memory_id, content=ALLERGY))

    # When an agent writes a similar fact
    result = write_entry(
        container.entries, container.embedder, NoChatModel(), project_id=project_id,
        entry=NewEntry(memory_id=memory_id, content=ALLERGY_MORE, source_type="agent"), agent=AgentContext(),
    )

    # Then it is created as a manual write would be, and the result says why
    assert result.action == "created" and result.degraded == (MERGE_NO_MODEL,)


def test_the_agent_context_needs_the_agent_source_type_and_the_write_scope(
    api: ApiClient, memory_id: str, make_key: KeyFactory
) -> None:
    response = api.post("/v1/memory-entries", {"memory_id": memory_id, "content": "x", "agent": {"model": "m"}})
    assert response.status == 422 and response.json["error"]["code"] == "validation_error"
    reader = ApiClient(make_key("acme", "read"))
    response = reader.post("/v1/memory-entries", {"memory_id": memory_id, "content": "x", "source_type": "agent"})
    assert response.status == 403
