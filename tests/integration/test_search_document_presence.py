"""A project without document chunks is searched without the documents' statements, with the same
answer; its first document is found by the first search after it is ready."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory_engine.adapters.postgres import search_documents as docs
from memory_engine.bootstrap import Container
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient
from tests.support.search_seed import Seeder

PROJECT = "memories-only"
SEARCH = "/v1/knowledge/search"
FACTS = ("the user's sister lives in Lisbon", "the user plays the cello on Tuesdays",
         "the user is training for a half marathon in October")


@pytest.fixture(scope="module")
def client(make_key: KeyFactory) -> ApiClient:
    return ApiClient(make_key(PROJECT, "read,write"))


@pytest.fixture(scope="module")
def memory_id(container: Container) -> str:
    seed = Seeder(container, PROJECT)
    memory = seed.memory("an agent's memories")
    for text in FACTS:
        seed.fact(memory, text)
    return memory


def search(client: ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(SEARCH, {"min_score": 0, **body})
    assert response.status == 200, response.json
    return response.json  # type: ignore[no-any-return]


@pytest.fixture
def document_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The documents' signal statements run, by name."""
    calls: list[str] = []

    def counted(name: str, run: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return run(*args, **kwargs)
        return wrapper

    for name in ("vector", "keyword"):
        monkeypatch.setattr(docs, name, counted(name, getattr(docs, name)))
    return calls


@pytest.mark.parametrize("signals", [["vector"], ["vector", "keyword", "entity"]])
def test_a_project_without_chunks_answers_the_same_without_the_documents_statements(
    client: ApiClient, memory_id: str, document_reads: list[str], signals: list[str]
) -> None:
    body = {"query": "where does my sister live?", "memory_ids": [memory_id], "signals": signals}
    # Given a search that found the project without any document chunk (or a first one that checks)
    first = search(client, body)
    document_reads.clear()
    # When the same search runs again
    again = search(client, body)
    # Then the documents' statements are left out, and the answer is the same
    assert document_reads == []
    assert again == first
    assert first["results"][0]["content"] == FACTS[0]


def test_a_projects_first_document_is_found_by_the_next_search(
    client: ApiClient, memory_id: str, document_reads: list[str]
) -> None:
    body = {"query": "which instrument does the user practise?", "memory_ids": [memory_id]}
    # Given searches that found no chunk in the project
    search(client, body)
    search(client, body)
    # When a document is ready
    created = client.post("/v1/documents", {"path": "/notes/music.md", "wait": True,
                                            "content": "Practice log: the cello, scales and a Bach suite on Tuesdays."})
    assert created.status in (200, 201), created.json
    assert created.json["status"] == "ready"
    # Then the next search finds it (the search noticed the chunk and ran with the documents)
    got = search(client, body)
    assert "document" in {r["source_type"] for r in got["results"]}
    assert "vector" in document_reads
    # And later searches run the documents' statements from the start
    document_reads.clear()
    search(client, body)
    assert document_reads.count("vector") == 1
