"""Newer facts above older ones (issue 35 section 4) on the real database and model: of two facts
on a page that state the same thing, the later one ranks first even when the older scores higher."""

from __future__ import annotations

from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.search_config import HYBRID, PRESETS, SearchConfig
from memory_engine.domain.search_models import SearchRequest
from memory_engine.services.search_knowledge import search_knowledge
from tests.support.api_client import ApiClient

MEMORIES = "/v1/memories"
ENTRIES = "/v1/memory-entries"
OLD = "The project has 150 commits merged into the main branch of the Git repository."
NEW = "The main branch now has 165 merged commits."
COMMITS = "How many commits has the project merged into the main branch of the Git repository?"
FILLER = ["The release checklist lives in the team wiki.", "Erin likes to eat sushi on Fridays.",
          "Erin drinks green tea every morning."]
ON = HYBRID
OFF = HYBRID.model_copy(update={"newer_first": False})


def memory_with(api: ApiClient, name: str, entries: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """A new memory holding ``entries`` written one after another (the order they were said in)."""
    created = api.post(MEMORIES, {"name": name})
    assert created.status == 201, created.json
    memory_id = str(created.json["id"])
    ids = []
    for entry in entries:
        written = api.post(ENTRIES, {"memory_id": memory_id, "duplicate_threshold": 1.0, **entry})
        assert written.status == 201, written.json
        ids.append(str(written.json["id"]))
    return memory_id, ids


def search(api: ApiClient, memory_id: str, query: str) -> list[dict[str, Any]]:
    """The page as the API returns it, at its defaults (``newer_first`` is on by default)."""
    response = api.post("/v1/knowledge/search", {"query": query, "memory_ids": [memory_id], "min_score": 0})
    assert response.status == 200, response.json
    return list(response.json["results"])


def ranked_ids(container: Container, memory_id: str, query: str, config: SearchConfig = ON) -> list[str]:
    project_id = container.projects.get_or_create_project("acme").id
    request = SearchRequest(query=query, memory_ids=[memory_id], min_score=0)
    response = search_knowledge(container.knowledge_index, container.embedder, project_id=project_id,
                                request=request, config=config)
    return [r.id for r in response.results]


@pytest.mark.parametrize("new_valid_from", ["2024-04-25T00:00:00Z", "2024-04-20T00:00:00Z"],
                         ids=["a later day", "the same day, written later"])
def test_the_newer_of_two_facts_on_the_same_thing_ranks_first_though_the_older_scores_higher(
    api: ApiClient, container: Container, new_valid_from: str,
) -> None:
    # Given "150 commits" said first and "165 commits" said later, among unrelated facts
    memory_id, (old, new, *_) = memory_with(api, f"repo {new_valid_from}", [
        {"content": OLD, "valid_from": "2024-04-20T00:00:00Z"},
        {"content": NEW, "valid_from": new_valid_from},
        *({"content": text, "valid_from": "2024-04-01T00:00:00Z"} for text in FILLER),
    ])
    # and a question worded like the older one, which the signals rank first
    assert ranked_ids(container, memory_id, COMMITS, OFF)[:2] == [old, new]
    # When the agent searches
    results = search(api, memory_id, COMMITS)
    # Then the newer value is listed first, right above the one it replaced
    by_id = {r["id"]: r for r in results}
    assert [r["id"] for r in results][:2] == [new, old]
    assert by_id[old]["similarity_score"] > by_id[new]["similarity_score"]
    # and the scores still never rise down the page: the moved fact takes the older one's score
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert by_id[new]["score"] == by_id[old]["score"]


def test_unrelated_facts_keep_the_order_of_their_scores(api: ApiClient, container: Container) -> None:
    # Given two facts about Erin that state different things, the one the query matches best said first
    memory_id, (sushi, tea, *_) = memory_with(api, "erin", [
        {"content": FILLER[1], "valid_from": "2024-04-01T00:00:00Z"},
        {"content": FILLER[2], "valid_from": "2024-04-10T00:00:00Z"},
        {"content": FILLER[0], "valid_from": "2024-04-20T00:00:00Z"},
    ])
    # When the agent asks what Erin likes to eat
    ranked = [r["id"] for r in search(api, memory_id, "What does Erin like to eat?")]
    # Then the later fact does not jump the better match: the page is the signals' order
    assert ranked[:2] == [sushi, tea]
    assert ranked == ranked_ids(container, memory_id, "What does Erin like to eat?", OFF)


def test_conversation_turns_keep_the_order_of_their_scores(api: ApiClient, container: Container) -> None:
    # Given the same two values said as turns of one conversation (each turn's vector also reads the
    # turn before it, so their cosine does not say they state the same thing)
    memory_id, _ = memory_with(api, "turns", [
        {"content": OLD, "valid_from": "2024-04-20T00:00:00Z", "source_conversation_id": "c1"},
        {"content": "Nice, congratulations on the release!", "valid_from": "2024-04-20T00:00:00Z",
         "source_conversation_id": "c1"},
        {"content": NEW, "valid_from": "2024-04-25T00:00:00Z", "source_conversation_id": "c1"},
    ])
    # Then turns are not reordered
    assert ranked_ids(container, memory_id, COMMITS) == ranked_ids(container, memory_id, COMMITS, OFF)


def test_keyword_only_pages_are_not_reordered(api: ApiClient, container: Container) -> None:
    # (the pairs are read from the rows' vectors: only pages the vector signal ranked are reordered)
    memory_id, (old, new) = memory_with(api, "repo keyword", [
        {"content": OLD, "valid_from": "2024-04-20T00:00:00Z"}, {"content": NEW, "valid_from": "2024-04-25T00:00:00Z"}])
    keyword_only = PRESETS["keyword_only"].model_copy(update={"newer_first": True})
    assert ranked_ids(container, memory_id, COMMITS, keyword_only) == [old, new]
    assert ranked_ids(container, memory_id, COMMITS, keyword_only) == ranked_ids(
        container, memory_id, COMMITS, PRESETS["keyword_only"])
