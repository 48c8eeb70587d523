"""`include: ["synthesis"]` on search, on the real database and embedding model with a scripted chat
model: a short prose summary of the returned results with its latency; absent (and listed in
`degraded`) when no model is configured or the call fails; never in place of `results`."""

from __future__ import annotations

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.search_models import SearchRequest
from memory_engine.domain.synthesis import SYNTHESIS_SYSTEM_PROMPT
from memory_engine.errors import ChatModelError
from memory_engine.ports.chat import ChatModel, NoChatModel
from memory_engine.services.search_knowledge import search_knowledge
from memory_engine.services.synthesize_results import SYNTHESIS_FAILED, SYNTHESIS_NO_MODEL
from tests.support.api_client import ApiClient
from tests.support.memories import ScriptedChat


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    return ScriptedChat()


@pytest.fixture(scope="module")
def memory_id(api: ApiClient) -> str:
    memory = api.post("/v1/memories", {"name": "synthesis"}).json
    for fact in ("Alice moved to Lisbon in 2023.", "Alice works as a nurse at Santa Maria hospital.",
                 "Bob plays the cello."):
        assert api.post("/v1/memory-entries", {"memory_id": memory["id"], "content": fact}).status == 201
    return str(memory["id"])


@pytest.fixture
def chat(container: Container) -> ScriptedChat:
    model = container.chat_model
    assert isinstance(model, ScriptedChat)
    return model


def _search(api: ApiClient, memory_id: str, **extra: object) -> dict:
    response = api.post("/v1/knowledge/search", {"query": "Where does Alice live?", "memory_ids": [memory_id], **extra})
    assert response.status == 200, response.json
    return response.json  # type: ignore[no-any-return]


def test_synthesis_summarizes_the_returned_results_with_its_latency(api: ApiClient, memory_id: str,
                                                                    chat: ScriptedChat) -> None:
    # Given a model that answers
    chat.script("  Alice lives in Lisbon,\nwhere she moved in 2023. ")

    # When a search asks for a synthesis
    plain = _search(api, memory_id)
    body = _search(api, memory_id, include=["synthesis"])

    # Then the results are the same as without it, and the synthesis (one paragraph) comes with its latency
    assert [r["id"] for r in body["results"]] == [r["id"] for r in plain["results"]]
    assert body["synthesis"]["text"] == "Alice lives in Lisbon, where she moved in 2023."
    assert body["synthesis"]["model"] == "scripted" and body["synthesis"]["latency_ms"] >= 0
    assert "degraded" not in body and "synthesis" not in plain
    # and the model was asked once, with the results as the fenced reference block
    (call,) = chat.calls
    assert call["system"] == SYNTHESIS_SYSTEM_PROMPT
    user = call["messages"][0].content  # type: ignore[index]
    assert '"Where does Alice live?"' in user and "<knowledge>" in user and "Alice moved to Lisbon in 2023." in user


def test_a_failing_model_leaves_the_results_and_says_so(api: ApiClient, memory_id: str, chat: ScriptedChat) -> None:
    for failure in (ChatModelError("throttled"), "   "):
        chat.script(failure)
        body = _search(api, memory_id, include=["synthesis"])
        assert body["results"] and "synthesis" not in body
        assert body["degraded"] == [SYNTHESIS_FAILED]


def test_without_a_model_synthesis_is_absent_and_degraded(container: Container, memory_id: str) -> None:
    project_id = container.projects.get_or_create_project("acme").id
    request = SearchRequest(query="Alice", memory_ids=[memory_id], include=["synthesis"])
    for chat in (None, NoChatModel()):
        response = search_knowledge(container.knowledge_index, container.embedder, project_id=project_id,
                                    request=request, chat=chat)
        assert response.results and response.synthesis is None and response.degraded == [SYNTHESIS_NO_MODEL]


def test_nothing_matched_means_no_model_call(api: ApiClient, chat: ScriptedChat) -> None:
    chat.script("should not be asked")
    body = api.post("/v1/knowledge/search", {"query": "anything", "memory_ids": ["mem_unknown"],
                                             "include": ["synthesis"]}).json
    assert body["results"] == [] and body["synthesis"] == {"text": "", "latency_ms": 0}
    assert chat.calls == []
