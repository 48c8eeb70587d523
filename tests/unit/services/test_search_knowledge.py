"""search_knowledge with fakes of its ports (no database, no model): the typed list keys, the
degraded mode's explicit flag and the caller's query vector."""

from __future__ import annotations

import numpy as np
import pytest

from memory_engine.domain.search_config import Signal
from memory_engine.domain.search_models import RankedLists, SearchRequest
from memory_engine.errors import InvalidInput
from memory_engine.services.search_knowledge import EMBEDDING_DEGRADED, search_knowledge
from tests.unit.services.fakes import DIM, FakeEmbedder, FakeIndex


def ranked() -> RankedLists:
    out = RankedLists()
    out.add(("memory", Signal.KEYWORD), [("memory", "ment_a"), ("memory", "ment_b")])
    out.add(("memory", Signal.ENTITY), [("memory", "ment_b")])
    return out


def test_results_carry_their_rank_per_signal_named_by_the_list_key() -> None:
    # Given an index whose keyword list has a then b, and whose entity list has b
    index = FakeIndex(ranked())
    # When a memory is searched for its whole ranking (the fake rows carry no evidence of relevance)
    response = search_knowledge(index, FakeEmbedder(), project_id="proj_1",
                                request=SearchRequest(query="where does Erin live", memory_ids=["mem_1"], min_score=0))
    # Then each result says its rank in each list by the signal's name
    ranks = {r.id: r.signal_ranks for r in response.results}
    assert ranks == {"ment_a": {"keyword": 1}, "ment_b": {"keyword": 2, "entity": 1}}
    assert response.degraded is None


def test_a_failed_query_embedding_degrades_to_keyword_entity_and_recency() -> None:
    # Given an embedding model that is down
    index = FakeIndex(ranked())
    # When a query is searched
    response = search_knowledge(index, FakeEmbedder(failing=True), project_id="proj_1",
                                request=SearchRequest(query="where does Erin live", memory_ids=["mem_1"]))
    # Then the index is asked for the degraded signals without a vector, and the answer says so
    (query,) = index.queries
    assert query.embedding is None
    assert query.signals == frozenset({Signal.KEYWORD, Signal.ENTITY, Signal.RECENCY})
    assert response.degraded == [EMBEDDING_DEGRADED]


def test_the_callers_query_vector_is_normalized_and_checked() -> None:
    index = FakeIndex(RankedLists())
    request = SearchRequest(query_embedding=[3.0, 0.0, 4.0, 0.0], memory_ids=["mem_1"])
    search_knowledge(index, FakeEmbedder(), project_id="proj_1", request=request)
    (query,) = index.queries
    assert query.embedding is not None and query.embedding.dtype == np.float32
    assert np.allclose(query.embedding, [0.6, 0.0, 0.8, 0.0])
    with pytest.raises(InvalidInput):  # wrong dimension
        search_knowledge(index, FakeEmbedder(), project_id="proj_1",
                         request=SearchRequest(query_embedding=[1.0] * (DIM + 1), memory_ids=["mem_1"]))


def test_an_rrf_search_fuses_the_ranks_and_scores_the_page_once_read() -> None:
    # Given the same lists, searched with the rrf_v1 preset (search v1)
    index = FakeIndex(ranked())
    request = SearchRequest(query="where does Erin live on 8 May, 2023", memory_ids=["mem_1"], min_score=0, preset="rrf_v1")
    response = search_knowledge(index, FakeEmbedder(), project_id="proj_1", request=request)
    # Then b (in both lists) leads a, each with its ranks; the fake rows have no cosine, so no evidence
    assert [(r.id, r.signal_ranks, r.score) for r in response.results] == [
        ("ment_b", {"keyword": 2, "entity": 1}, 0.0), ("ment_a", {"keyword": 1}, 0.0)]
    # And the index was asked for no date list (RRF reads no query feature)
    (query,) = index.queries
    assert query.dates == ()
