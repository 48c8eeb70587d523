"""Unrelated queries come back empty at the default relevance floor (LoCoMo and SciFact subsets)."""

from __future__ import annotations

import pytest

from memory_engine.bootstrap import Container
from memory_engine.evaluation import beir, locomo
from memory_engine.evaluation.scored import NegativesReport
from tests.conftest import shared_data
from tests.integration.eval_gate import MARGIN

#: The negatives benchmark on bounded subsets (``memory-engine eval negatives`` in full: docs/retrieval.md,
#: "Score and relevance floor"), per data set at the default floor: the share of negatives returning
#: nothing, the recall@10 the floor costs the positives, the AUROC of the top score (the same subsets:
#: ``memory-engine eval negatives --conversations 2 --questions 60 --queries 100 --docs 600``, at cf3e54e).
NEGATIVES = {
    "locomo": {"negatives_empty": 0.950, "recall_drop": 0.025, "auroc": 0.994},
    "scifact": {"negatives_empty": 0.490, "recall_drop": 0.073, "auroc": 0.864},
}


@pytest.mark.slow
def test_negatives_gate(container: Container) -> None:
    # Given two LoCoMo conversations (each question in its own memory and in the other's) and 100
    # SciFact claims over two slices of abstracts (their own and one without their judged ones)
    conversations = locomo.load(shared_data("locomo", "locomo_dev5.json"), max_conversations=2)
    by_set = {
        "locomo": locomo.negatives(container, conversations, max_questions=60, project="gate-negatives-locomo"),
        "scifact": beir.negatives(container, beir.load(shared_data("scifact"), max_queries=100, max_docs=600),
                                  project="gate-negatives-beir"),
    }
    # When the default relevance floor applies
    report = NegativesReport()
    lines = {name: report.add(name, queries) for name, queries in by_set.items()}
    print("\n" + report.render())
    # Then unrelated queries come back empty, at little cost to the related ones, and the top score
    # separates the two
    for name, line in lines.items():
        floor = NEGATIVES[name]
        assert line["negatives_empty"] >= floor["negatives_empty"] - MARGIN, name
        assert line["recall_drop"] <= floor["recall_drop"] + MARGIN / 2, name
        assert line["auroc"] >= floor["auroc"] - MARGIN, name
