"""Each signal alone finds what it should; convex fusion combines them; the Netflix example end to end."""

from __future__ import annotations

from typing import Any

import pytest

from memory_engine.bootstrap import Container
from tests.support.api_client import ApiClient
from tests.support.search_seed import Seeder

SEARCH = "/v1/knowledge/search"


@pytest.fixture(scope="module")
def world(container: Container) -> dict[str, Any]:
    seed = Seeder(container, "acme")
    mem = seed.memory("alice preferences", tags=("user:alice",))
    ids = {
        "mem": mem,
        "netflix": seed.fact(mem, "user watches breaking bad on netflix",
                             entities=(("user", "subject"), ("breaking bad", "object"), ("Netflix", "mention"))),
        "favourite": seed.fact(mem, "user's favourite show is breaking bad",
                               entities=(("breaking bad", "subject"),)),
        "coffee": seed.fact(mem, "user drinks oat milk flat whites every morning", entities=(("user", "subject"),)),
        "sku": seed.fact(mem, "the replacement filter part number is XJ-4471", entities=(("water filter", "subject"),)),
        "start": seed.fact(mem, "user will start a new job in May", entities=(("user", "subject"),)),
        "art": seed.fact(mem, "the art class meets on thursdays", entities=(("art", "subject"),)),
        "hiking": seed.fact(mem, "user enjoys hiking in the alps during summer", entities=(("user", "subject"),)),
    }
    # the Netflix bridge: "breaking bad" is linked to netflix through the first fact
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


def test_vector_alone_finds_paraphrases(api: ApiClient, world: dict[str, Any]) -> None:
    # When the query shares no keyword with the fact
    body = search(api, query="what coffee does she order?", memory_ids=[world["mem"]], signals=["vector"], limit=3)
    # Then the vector signal still ranks it first, with its raw cosine as similarity_score
    top = body["results"][0]
    assert top["id"] == world["coffee"]
    assert set(top["signal_ranks"]) == {"vector"}
    assert 0.2 < top["similarity_score"] <= 1.0


def test_keyword_alone_finds_exact_terms(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query="XJ-4471", memory_ids=[world["mem"]], signals=["keyword"])
    assert ids_of(body) == [world["sku"]]
    assert body["results"][0]["signal_ranks"] == {"keyword": 1}


def test_keyword_ors_the_terms_of_a_question(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query="where does the user go hiking?", memory_ids=[world["mem"]], signals=["keyword"])
    assert ids_of(body)[0] == world["hiking"]


def test_keyword_honours_websearch_syntax(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query='"breaking bad" -netflix', memory_ids=[world["mem"]], signals=["keyword"])
    assert ids_of(body) == [world["favourite"]]


def test_netflix_example_surfaces_the_favourite_show_through_the_anchor(api: ApiClient, world: dict[str, Any]) -> None:
    # Given "user's favourite show is breaking bad" shares no word with the query
    query = "anything good on Netflix tonight?"
    keyword = search(api, query=query, memory_ids=[world["mem"]], signals=["keyword"])
    assert world["favourite"] not in ids_of(keyword)
    # When the entity signal runs alone
    entity = search(api, query=query, memory_ids=[world["mem"]], signals=["entity"])
    # Then "netflix" is named in the query -> the fact touching it comes first -> and its most
    # specific other entity ("breaking bad") bridges to the favourite show
    got = ids_of(entity)
    assert got[0] == world["netflix"]
    assert got[1] == world["favourite"]
    assert entity["results"][1]["signal_ranks"] == {"entity": 2}
    # And the hybrid search keeps both in its top results, the favourite show through the anchor
    hybrid = search(api, query=query, memory_ids=[world["mem"]], render=True, limit=5)
    assert world["netflix"] in ids_of(hybrid)[:2]
    favourite = next(r for r in hybrid["results"] if r["id"] == world["favourite"])
    assert favourite["signal_ranks"]["entity"] == 2
    assert "user's favourite show is breaking bad" in hybrid["context"]


def test_art_does_not_fire_inside_start(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query="when do I start?", memory_ids=[world["mem"]], signals=["entity"])
    assert world["art"] not in ids_of(body)
    body = search(api, query="how is the art class going?", memory_ids=[world["mem"]], signals=["entity"])
    assert ids_of(body)[0] == world["art"]


def test_entity_signal_orders_by_relevance_not_row_order(api: ApiClient, world: dict[str, Any]) -> None:
    # Given four facts touch the entity "user"
    body = search(api, query="user hiking mountains", memory_ids=[world["mem"]], signals=["entity"])
    got = ids_of(body)
    assert got[0] == world["hiking"]
    body = search(api, query="user coffee habit", memory_ids=[world["mem"]], signals=["entity"])
    assert ids_of(body)[0] == world["coffee"]


def test_hybrid_fuses_normalized_scores_and_reports_every_rank(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query="user hiking in the alps", memory_ids=[world["mem"]], limit=3)
    top = body["results"][0]
    assert top["id"] == world["hiking"]
    assert top["signal_ranks"] == {"vector": 1, "keyword": 1, "entity": 1}
    # the fused order (unit-tested in tests/unit/domain/test_fusion.py) is the page's order, and the
    # score each row carries is the calibrated estimate (domain/relevance.py): 0..1, never rising
    # down the page; a row first in every list with most of the query's words scores high
    assert 0.5 < top["score"] <= 1.0
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)


def test_query_embedding_skips_the_model_and_is_dimension_checked(
    api: ApiClient, world: dict[str, Any], container: Container
) -> None:
    vector = container.embedder.embed_query("what coffee does she order?").tolist()
    body = search(api, query_embedding=vector, memory_ids=[world["mem"]], limit=1)
    assert ids_of(body) == [world["coffee"]]
    bad = api.post(SEARCH, {"query": "x", "query_embedding": vector[:10], "memory_ids": [world["mem"]]})
    assert bad.status == 422
    assert "384" in bad.json["error"]["message"]


def test_repeated_queries_hit_the_embedding_cache(api: ApiClient, world: dict[str, Any], container: Container) -> None:
    search(api, query="a very particular question about tea", memory_ids=[world["mem"]])
    hits = container.embedder.cache_hits
    search(api, query="a very particular question about tea", memory_ids=[world["mem"]])
    assert container.embedder.cache_hits == hits + 1
