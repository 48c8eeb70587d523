"""The quality gate: bounded runs of the real evaluations fail when search v2 falls below the
figures it reached (docs/retrieval.md, "CI gate") minus a small margin.

The runs are deterministic for a given code, model and data (exact statistics on these small
scopes; the HNSW graphs hold every row within ``ef_search``), so the margin only absorbs what an
index rebuild may reorder, not noise.
"""

from __future__ import annotations

import pytest

from memory_engine.bootstrap import Container
from memory_engine.evaluation import beam, beir, locomo
from memory_engine.evaluation.scored import NegativesReport
from tests.conftest import shared_data

MARGIN = 0.02
#: Measured on the bounded subsets below (``.venv/bin/python -m pytest tests/integration/test_eval_gate.py -s``).
LOCOMO_DEV5 = {"hybrid": 0.806, "keyword_only": 0.694, "vector_only": 0.560}
SCIFACT_SUBSET = {"hybrid": 0.840, "keyword_only": 0.806, "vector_only": 0.863}


@pytest.mark.slow
def test_locomo_gate_on_the_five_dev_conversations(container: Container) -> None:
    # Given the five dev conversations (2,760 turns), each written through the funnel, analyzed and
    # asked its questions in turn, as `memory-engine eval locomo` does: what one conversation's
    # statistics leave behind for the next is part of what is measured
    conversations = locomo.load(shared_data("locomo", "locomo_dev5.json"))
    table = locomo.evaluate(container, conversations, rows=("vector_only", "keyword_only", "hybrid", "rrf_v1"),
                            project="gate-locomo")
    got = {row: table.mean(row, "overall", "R@10") for row in ("vector_only", "keyword_only", "hybrid", "rrf_v1")}
    print("\nLoCoMo dev5 R@10:", {k: round(v, 3) for k, v in got.items()})
    # Then every row holds its recorded figure, and fusion beats each signal alone and search v1
    for row, floor in LOCOMO_DEV5.items():
        assert got[row] >= floor - MARGIN, f"{row} R@10 {got[row]:.3f} < {floor} - {MARGIN}"
    assert got["hybrid"] > max(got["vector_only"], got["keyword_only"], got["rrf_v1"])


@pytest.mark.slow
def test_scifact_gate_on_a_subset(container: Container) -> None:
    # Given 100 train claims over their judged abstracts plus distractors (600 abstracts)
    data = beir.load(shared_data("scifact"), max_queries=100, max_docs=600)
    table = beir.evaluate(container, data, rows=("vector_only", "keyword_only", "hybrid", "rrf_v1"), project="gate-beir")
    got = {row: table.mean(row, "overall", "nDCG@10") for row in ("vector_only", "keyword_only", "hybrid", "rrf_v1")}
    print("\nSciFact subset nDCG@10:", {k: round(v, 3) for k, v in got.items()})
    for row, floor in SCIFACT_SUBSET.items():
        assert got[row] >= floor - MARGIN, f"{row} nDCG@10 {got[row]:.3f} < {floor} - {MARGIN}"
    # (with few distractors the vector signal alone is best here, and on these 100 claims the two fusions
    # trade places within what 100 queries can tell apart: 0.840 vs 0.847 before a lowercase "or" was a
    # word, 0.840 vs 0.852 since, as the keyword signal rose; the full corpus separates them, 0.736 vs
    # 0.703: docs/retrieval.md)
    assert got["hybrid"] > got["keyword_only"] and got["hybrid"] >= got["rrf_v1"] - MARGIN


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


#: BEAM's first three 100K conversations (``memory-engine eval beam --sizes 100K --conversations 3``):
#: evidence recall@10 over their 54 questions with evidence.
BEAM_SUBSET = {"hybrid": 0.692, "keyword_only": 0.516, "vector_only": 0.626}


@pytest.mark.slow
def test_beam_gate_on_three_conversations(container: Container) -> None:
    # Given three long technical conversations written through the batch path, long messages split
    conversations = beam.load(shared_data("beam"), sizes=("100K",), max_conversations=3)
    # When their questions are asked under each preset and of a plain BM25 index over the same messages
    report = beam.evaluate(container, conversations, project="gate-beam")
    got = {row: report.table.mean(row, "overall", "R@10") for row in (*BEAM_SUBSET, "plain BM25 (bm25s)")}
    print("\nBEAM subset R@10:", {k: round(v, 3) for k, v in got.items()})
    # Then every row holds its recorded figure and fusion is ahead of every signal alone and of plain
    # BM25: since a question in the first person lifts the user's own turns (docs/retrieval.md, "Who
    # a row is about, and who asks") by 0.066 over the vector signal here (0.692 against 0.626; 0.051
    # over the first five, 0.086 over the 28 dev conversations; level with it, 0.621, before). A fusion
    # that collapses to its weaker list (issue 35: 0.263 against 0.393) is far outside this.
    for row, floor in BEAM_SUBSET.items():
        assert got[row] >= floor - MARGIN, f"{row} R@10 {got[row]:.3f} < {floor} - {MARGIN}"
    assert got["hybrid"] > max(got["keyword_only"], got["plain BM25 (bm25s)"], got["vector_only"])
