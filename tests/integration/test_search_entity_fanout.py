"""The entity signal ranks every fact in scope that touches an anchor by relevance: not only the most
recent of the anchor's links, and not only those of other memories (SPEC: "every live fact touching
them, ordered by relevance, not by row order"). In a project of many memories (one per user, as the
agent framework integrations write), a search of one memory judges and finds entities by what that
memory holds: an entity the other memories mention often is no hub there, and its similar entities
are those linked in it (migration 0015)."""

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


@pytest.fixture(scope="module")
def users(container: Container) -> dict[str, Any]:
    """Project acme (the test key's): one user's memory with three facts about Kingfisher, another
    user's with 150 (Kingfisher touches 153 facts of the project: over the hub cap of 100)."""
    seed = Seeder(container, "acme")
    alice, bob = seed.memory("user alice"), seed.memory("user bob")
    kingfisher = (("Kingfisher", "subject"),)
    mine = [seed.fact(alice, text, entities=kingfisher) for text in (
        "Kingfisher is the bakery where Alice orders her sourdough",
        "Kingfisher opens at seven on weekdays",
        "Alice pays for Kingfisher with a loyalty card")]
    for i in range(150):
        seed.fact(bob, f"Bob's Kingfisher order {i} was delivered", entities=kingfisher, embed=False)
    return {"alice": alice, "mine": mine}


def test_an_entity_other_memories_mention_often_is_no_hub_in_a_memory_that_mentions_it_little(
    api: ApiClient, users: dict[str, Any]
) -> None:
    # Given Kingfisher is on 150 facts of Bob's memory and on three of Alice's
    # When Alice's memory is searched by entity for it
    got = entity_ids(api, "when does Kingfisher open?", users["alice"])
    # Then her three facts are the entity list (it is judged by her memory's links, not the project's)
    assert set(got) == set(users["mine"])


@pytest.fixture(scope="module")
def drones(container: Container) -> dict[str, Any]:
    """Project acme: one memory's facts about "Osprey survey drone pilot"; five entities nearer the
    query than it (all above the similarity floor 0.75) are linked only in another memory."""
    seed = Seeder(container, "acme")
    mine, theirs = seed.memory("field team"), seed.memory("other team")
    pilot = (("Osprey survey drone pilot", "subject"),)
    facts = [seed.fact(mine, "the Osprey survey drone pilot renewed her licence in May", entities=pilot),
             seed.fact(mine, "the Osprey survey drone pilot flies the coastal route", entities=pilot)]
    for name in ("Osprey survey drones", "survey drone Osprey", "Osprey drone survey", "Osprey survey drone team",
                 "Osprey survey drone mk2"):
        seed.fact(theirs, f"{name} was logged in the hangar inventory", entities=((name, "subject"),))
    return {"memory": mine, "facts": facts, "project_id": seed.project_id}


def test_a_memorys_similar_entities_are_those_linked_in_it(
    api: ApiClient, container: Container, drones: dict[str, Any]
) -> None:
    query = "how is the Osprey survey drone doing?"
    # Given the project's three entities nearest the query are all linked in the other memory only
    vector = container.embedder.embed_query(query)
    with container.database.connection() as conn:
        nearest = [r["name"] for r in conn.execute(
            "SELECT name FROM entities WHERE project_id = %s ORDER BY embedding <=> %s::vector LIMIT 3",
            (drones["project_id"], vector)).fetchall()]
    assert "osprey survey drone pilot" not in nearest, nearest
    # When the field team's memory is searched by entity
    got = entity_ids(api, query, drones["memory"])
    # Then its pilot is the similar anchor and both facts about it are found
    assert set(got) == set(drones["facts"])
