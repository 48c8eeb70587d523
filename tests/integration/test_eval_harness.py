"""The evaluation harness computes sane metrics on small real subsets (full runs: docs/retrieval.md)."""

from __future__ import annotations

import math

from memory_engine.bootstrap import Container
from memory_engine.evaluation import beir, locomo
from memory_engine.evaluation.metrics import ndcg_at_k, recall_at_k, reciprocal_rank
from tests.conftest import shared_data


def test_metric_definitions() -> None:
    ranked = [frozenset(), frozenset({"a"}), frozenset({"b", "c"})]
    assert recall_at_k(ranked, frozenset({"a", "b"}), 2) == 0.5
    assert recall_at_k(ranked, frozenset({"a", "b"}), 3) == 1.0
    assert reciprocal_rank(ranked, frozenset({"b"})) == 1 / 3
    assert ndcg_at_k([frozenset({"a"})], {"a": 1.0}, 10) == 1.0
    assert math.isclose(ndcg_at_k(ranked, {"a": 1.0}, 10), 1 / math.log2(3))


def test_locomo_evidence_ids_are_parsed_defensively() -> None:
    assert locomo.parse_evidence(["D1:3", "D8:6; D9:17", "D", "D:11:26", "D10:02"]) == {
        "D1:3", "D8:6", "D9:17", "D10:2",
    }
    assert locomo.parse_session_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"  # type: ignore[union-attr]
    assert locomo.parse_session_date("sometime") is None


def test_locomo_harness_on_one_conversation(container: Container) -> None:
    # Given the first three sessions of one real LoCoMo conversation
    conversations = locomo.load(shared_data("locomo", "locomo_dev5.json"), max_conversations=1, max_sessions=3)
    assert conversations[0].questions
    # When the harness writes it through the funnel and runs the presets
    table = locomo.evaluate(container, conversations, rows=("vector_only", "keyword_only", "hybrid"))
    # Then the metrics are probabilities, retrieval clearly beats chance, and the table renders
    for row in ("vector_only", "keyword_only", "hybrid"):
        for metric in ("R@5", "R@10", "MRR"):
            assert 0.0 <= table.mean(row, "overall", metric) <= 1.0
        assert table.mean(row, "overall", "R@10") >= table.mean(row, "overall", "R@5")
    assert table.mean("hybrid", "overall", "R@10") > 0.4
    assert "| hybrid |" in table.render("LoCoMo")


def test_beir_harness_on_a_scifact_subset(container: Container) -> None:
    data = beir.load(shared_data("scifact"), max_queries=20, max_docs=120)
    assert len(data.queries) == 20 and len(data.corpus) == 120
    table = beir.evaluate(container, data)
    for row in beir.ROWS:
        assert 0.0 <= table.mean(row, "overall", "nDCG@10") <= 1.0
    assert table.mean("vector_only", "overall", "nDCG@10") > 0.5
    assert table.count("hybrid", "overall") == 20
