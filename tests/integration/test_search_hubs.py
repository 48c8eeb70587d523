"""Hub anchors: an entity on most facts of the searched scope ("user", a LoCoMo speaker) does not
flood the entity signal; a specific entity named in the query still anchors."""

from __future__ import annotations

from typing import Any

import pytest

from memory_engine.adapters.postgres import lanes
from memory_engine.adapters.postgres import search_entities as ents
from memory_engine.bootstrap import Container
from memory_engine.domain.search_models import MemoryScope
from tests.support.api_client import ApiClient
from tests.support.search_seed import Seeder

SEARCH = "/v1/knowledge/search"

TOPICS = (
    "user drinks green tea in the afternoon", "user is learning to play the cello", "user lives in a flat in Leeds",
    "user has a grey cat called Miso", "user works as a data engineer", "user prefers trains to planes",
    "user is allergic to peanuts", "user runs five kilometres on Sundays", "user reads science fiction novels",
    "user grows tomatoes on the balcony", "user supports a local football club", "user bakes sourdough bread",
    "user is saving for a new bicycle", "user speaks Spanish and Portuguese", "user visits her parents monthly",
    "user collects vinyl records", "user dislikes horror films", "user volunteers at a food bank",
    "user plays chess online at night", "user wants to visit Japan next spring", "user uses a standing desk",
    "user keeps a paper journal", "user listens to jazz while cooking", "user recently repainted the kitchen",
)


@pytest.fixture(scope="module")
def world(container: Container) -> dict[str, Any]:
    seed = Seeder(container, "acme")
    big = seed.memory("a user with many facts")
    ids: dict[str, Any] = {"big": big, "topics": []}
    for text in TOPICS:  # "user" is on every fact of this memory: a hub (>= 20 facts, > 20 % of them)
        ids["topics"].append(seed.fact(big, text, entities=(("user", "subject"),)))
    ids["kayak"] = seed.fact(big, "user paddles a kayak on lake tahoe",
                             entities=(("user", "subject"), ("kayak", "object"), ("lake tahoe", "mention")))
    ids["kayak_repair"] = seed.fact(big, "the kayak has a cracked rudder", entities=(("kayak", "subject"),))
    ids["cabin"] = seed.fact(big, "the cabin at lake tahoe is booked for July",
                             entities=(("user", "subject"), ("lake tahoe", "object")))
    small = seed.memory("a user with three facts")
    ids["small"] = small
    ids["small_facts"] = [
        seed.fact(small, text, entities=(("user", "subject"),))
        for text in ("user enjoys hiking in the alps", "user drinks oat milk flat whites", "user starts a job in May")
    ]
    ids["project_id"] = seed.project_id
    ids["user"] = seed.entity("user")
    ids["kayak_entity"] = seed.entity("kayak")
    return ids


def search(api: ApiClient, **body: Any) -> dict[str, Any]:
    """The whole ranking unless a test says otherwise: these tests are about how rows rank, not
    about the relevance floor (test_search_relevance.py)."""
    body.setdefault("min_score", 0)
    response = api.post(SEARCH, body)
    assert response.status == 200, response.json
    return response.json  # type: ignore[no-any-return]


def ids_of(body: dict[str, Any]) -> list[str]:
    return [r["id"] for r in body["results"]]


def test_a_hub_anchor_does_not_flood_the_entity_list(api: ApiClient, world: dict[str, Any]) -> None:
    # Given "user" touches all 27 facts of the memory and "kayak" two of them
    # When the query names both
    body = search(api, query="what does the user say about the kayak?", memory_ids=[world["big"]],
                  signals=["entity"], limit=20)
    got = ids_of(body)
    # Then only "kayak" anchors: its two facts first, then the one-hop bridge through "lake tahoe"
    assert set(got[:2]) == {world["kayak"], world["kayak_repair"]}
    assert got[2:] == [world["cabin"]]
    # And none of the facts that only touch the hub "user" is in the entity list
    assert not set(got) & set(world["topics"])


def test_a_query_naming_only_a_hub_gets_no_entity_list(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query="what does the user do on Sundays?", memory_ids=[world["big"]], signals=["entity"])
    assert body["results"] == []
    # while the hybrid search still answers from vector and keyword, without an entity rank
    hybrid = search(api, query="what does the user do on Sundays?", memory_ids=[world["big"]], limit=3)
    assert hybrid["results"][0]["id"] == world["topics"][7]
    assert all("entity" not in r["signal_ranks"] for r in hybrid["results"])


def test_hubs_are_judged_within_the_searched_scope(api: ApiClient, world: dict[str, Any]) -> None:
    # Given the same entity "user" touches all 3 facts of a small memory (below the absolute floor)
    body = search(api, query="what does the user drink?", memory_ids=[world["small"]], signals=["entity"])
    # Then it still anchors there, ordered by relevance
    assert ids_of(body)[0] == world["small_facts"][1]
    assert set(ids_of(body)) == set(world["small_facts"])


def test_split_hubs_uses_capped_counts(container: Container, world: dict[str, Any]) -> None:
    scope = MemoryScope(memory_ids=(world["big"],))
    anchors = [world["kayak_entity"], world["user"]]
    with container.database.connection() as conn, lanes.bound(conn):
        assert ents.split_hubs(conn, world["project_id"], scope, anchors, size=27) == ([world["kayak_entity"]], [world["user"]])
        small = MemoryScope(memory_ids=(world["small"],))
        assert ents.split_hubs(conn, world["project_id"], small, anchors, size=3) == (anchors, [])
        assert ents.split_hubs(conn, world["project_id"], scope, [], size=27) == ([], [])


def test_an_anchor_beyond_the_absolute_cap_is_a_hub_whatever_the_share(container: Container, world: dict[str, Any]) -> None:
    # Given shares never make a hub, but the absolute cap is 10 facts
    rule = ents.HubRule(share=1.0, max_degree=10)
    scope = MemoryScope(memory_ids=(world["big"], world["small"]))
    anchors = [world["user"], world["kayak_entity"]]
    with container.database.connection() as conn, lanes.bound(conn):
        # Then "user" (30 facts) is a hub and "kayak" (2) is not
        assert ents.split_hubs(conn, world["project_id"], scope, anchors, size=30, hubs=rule) == (
            [world["kayak_entity"]], [world["user"]])
        # (under the default cap of 100 neither is: the cap made "user" one)
        assert ents.split_hubs(conn, world["project_id"], scope, anchors, size=30, hubs=ents.HubRule(share=1.0)) == (
            anchors, [])


def test_an_anchor_is_judged_against_the_scope_size_given(container: Container, world: dict[str, Any]) -> None:
    # Given "user" links 30 facts (27 in the big memory, 3 in the small one), between the hub floor and cap
    scope = MemoryScope(memory_ids=(world["big"],))
    anchors = [world["kayak_entity"], world["user"]]
    with container.database.connection() as conn, lanes.bound(conn):
        # When the scope holds 1,000 facts, 20 % of it is more than all of its links: not a hub
        assert ents.split_hubs(conn, world["project_id"], scope, anchors, size=1_000) == (anchors, [])
        # And with the scope's real size (27 facts) it is one
        assert ents.split_hubs(conn, world["project_id"], scope, anchors, size=27) == ([world["kayak_entity"]], [world["user"]])
