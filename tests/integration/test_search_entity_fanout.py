"""The entity signal ranks every fact in scope that touches an anchor by relevance: not only the most
recent of the anchor's links, and not only those of other memories (SPEC: "every live fact touching
them, ordered by relevance, not by row order")."""

from __future__ import annotations

from typing import Any

import pytest

from memory_engine.bootstrap import Container
from tests.support.api_client import ApiClient
from tests.support.search_seed import Seeder

SEARCH = "/v1/knowledge/search"
FALCON = (("Falcon", "subject"),)
KESTREL = (("Kestrel", "subject"),)


def entity_ids(api: ApiClient, query: str, memory_id: str) -> list[str]:
    response = api.post(SEARCH, {"query": query, "memory_ids": [memory_id], "signals": ["entity"], "min_score": 0,
                                 "limit": 20})
    assert response.status == 200, response.json
    return [r["id"] for r in response.json["results"]]


@pytest.fixture(scope="module")
def shared(container: Container) -> dict[str, Any]:
    """Project acme (the test key's): two facts about Falcon in one memory, then 60 later ones in another memory."""
    seed = Seeder(container, "acme")
    notes, logs = seed.memory("launch notes"), seed.memory("telemetry")
    launch = [seed.fact(notes, "the Falcon launch slipped to March 3", entities=FALCON),
              seed.fact(notes, "the Falcon launch needs a range safety sign-off", entities=FALCON)]
    for i in range(60):
        seed.fact(logs, f"Falcon telemetry packet {i} was archived", entities=FALCON, embed=False)
    return {"notes": notes, "launch": launch}


def test_an_anchors_links_into_other_memories_do_not_hide_the_searched_ones(
    api: ApiClient, shared: dict[str, Any]
) -> None:
    # Given Falcon's 60 newest links are in another memory of the project (62 links: not a hub)
    # When the memory holding its two older facts is searched by entity
    got = entity_ids(api, "when is the Falcon launch?", shared["notes"])
    # Then both are in the entity list
    assert set(got) == set(shared["launch"])


@pytest.fixture(scope="module")
def crowded(container: Container) -> dict[str, Any]:
    """One memory: the launch fact about Kestrel first, then 55 later facts about Kestrel, among 230
    facts about other things (Kestrel touches 19 % of the memory: not a hub)."""
    seed = Seeder(container, "acme")
    memory = seed.memory("mission log")
    launch = seed.fact(memory, "the Kestrel launch is planned for March 3 at dawn", entities=KESTREL)
    for i in range(55):
        seed.fact(memory, f"Kestrel telemetry packet {i} was archived to cold storage", entities=KESTREL)
    for i in range(230):
        seed.fact(memory, f"routine note {i} about the canteen menu", embed=False)
    return {"memory": memory, "launch": launch}


def test_an_anchors_oldest_fact_is_ranked_by_relevance_not_left_out(
    api: ApiClient, crowded: dict[str, Any]
) -> None:
    # Given Kestrel's oldest fact is the one about its launch, with 55 newer Kestrel facts after it
    got = entity_ids(api, "when is the Kestrel launch planned?", crowded["memory"])
    # Then the entity list holds Kestrel's facts and ranks the launch first, by relevance
    assert got[0] == crowded["launch"]
    assert len(got) == 20

