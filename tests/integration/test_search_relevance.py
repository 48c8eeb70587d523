"""The calibrated score and the default relevance floor through the real route (issue 35 section 1)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_engine.bootstrap import Container
from tests.support.api_client import ApiClient

SEARCH = "/v1/knowledge/search"
MEMORIES = "/v1/memories"
ENTRIES = "/v1/memory-entries"


def search(api: ApiClient, **body: Any) -> dict[str, Any]:
    response = api.post(SEARCH, body)
    assert response.status == 200, response.json
    return response.json  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def email_memory(api: ApiClient, container: Container) -> str:
    created = api.post(MEMORIES, {"name": "preferences"})
    assert created.status == 201, created.json
    memory_id = str(created.json["id"])
    written = api.post(ENTRIES, {"memory_id": memory_id, "content": "The user prefers email over phone calls for updates",
                                 "subject": "user", "entities": [{"name": "user"}]})
    assert written.status in (200, 201), written.json
    return memory_id


def test_an_unrelated_query_returns_nothing_and_renders_nothing(api: ApiClient, email_memory: str) -> None:
    # Given a memory holding one fact about email preferences
    # When an agent asks about something no stored row relates to, with render on
    body = search(api, query="quantum chromodynamics lattice", memory_ids=[email_memory], render=True)
    # Then nothing is returned and nothing would be injected into its prompt
    assert body["results"] == []
    assert body["context"] == ""


def test_min_score_zero_returns_the_whole_ranking_with_its_low_score(api: ApiClient, email_memory: str) -> None:
    # When the caller asks for the full ranking
    body = search(api, query="quantum chromodynamics lattice", memory_ids=[email_memory], min_score=0)
    # Then the fact comes back, scored as what it is: nearly certainly not relevant
    assert len(body["results"]) == 1
    assert 0.0 <= body["results"][0]["score"] < 0.05


def test_a_related_query_finds_the_fact_with_a_high_score(api: ApiClient, email_memory: str) -> None:
    body = search(api, query="does the user prefer email or phone for updates?", memory_ids=[email_memory], render=True)
    assert len(body["results"]) == 1
    assert 0.5 < body["results"][0]["score"] <= 1.0
    assert "email" in body["context"]
