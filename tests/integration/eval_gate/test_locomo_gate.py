"""LoCoMo's five dev conversations: recall@10 of every preset, and fusion ahead of each signal alone."""

from __future__ import annotations

import pytest

from memory_engine.bootstrap import Container
from memory_engine.evaluation import locomo
from tests.conftest import shared_data
from tests.integration.eval_gate import MARGIN

#: R@10 on the five dev conversations.
LOCOMO_DEV5 = {"hybrid": 0.806, "keyword_only": 0.694, "vector_only": 0.560}


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
