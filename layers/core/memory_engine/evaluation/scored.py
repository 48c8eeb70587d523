"""Scored queries: a query's first rows with their evidence, and the negatives report over them.

Negatives: does search return nothing when nothing is relevant, and what does that cost?

Each data set gives positive queries (their relevant rows are in the searched scope) and negative
ones (nothing relevant is): LoCoMo questions searched in their own conversation's memory and in the
next conversation's; SciFact claims searched in a slice of the corpus that holds their judged
abstracts and in one that does not; BEAM's ``abstention`` questions (no evidence) in their own
conversation (evaluation/beam.py). Reported per data set, at the default relevance floor:

- the share of negatives that return nothing,
- recall@10 of the positives with the floor and without it (``min_score: 0``), and the drop,
- the AUROC of the top result's score, positives against negatives (a negative returning nothing
  scores 0).

``rows_of`` also returns each query's scored rows (the first 10 of the ranking with their evidence
and whether they are relevant): evaluation/calibration.py fits the score's model on them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_engine.bootstrap import Container
from memory_engine.domain.relevance import Evidence, along_ranking, kept
from memory_engine.domain.search_config import HYBRID, SearchConfig
from memory_engine.domain.search_models import Scopes, SearchRequest
from memory_engine.evaluation.metrics import recall_at_k
from memory_engine.services.search_knowledge import _query_vector, ranking

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoredQuery:
    """One query's first ``limit`` rows of the fused ranking: each row's evidence, estimate and
    labels (the relevant ones it carries), and the query's relevant labels (empty: a negative)."""

    dataset: str
    relevant: frozenset[str]
    rows: list[tuple[Evidence, float, frozenset[str]]]

    @property
    def positive(self) -> bool:
        return bool(self.relevant)

    def scores(self) -> list[float]:
        return along_ranking([estimate for _, estimate, _ in self.rows])

    def top(self, floor: float | None) -> float:
        """The score of the first result with ``min_score`` ``floor`` (None: the default floor;
        0 when nothing is returned)."""
        scores = self.scores()
        return scores[0] if kept(scores, floor) else 0.0

    def recall(self, floor: float | None, k: int = 10) -> float:
        returned = [labels for _, _, labels in self.rows][: kept(self.scores(), floor)]
        return recall_at_k(returned, self.relevant, k)


def rows_of(
    container: Container, project_id: str, request: SearchRequest, labels: dict[str, frozenset[str]],
    relevant: frozenset[str], dataset: str, config: SearchConfig = HYBRID,
) -> ScoredQuery:
    """Run ``request`` (its ``limit``) and keep the ranking's first rows with their evidence."""
    query_vector = _query_vector(request, container.embedder)
    ranked = ranking(container.knowledge_index, project_id, request, config, Scopes.from_request(request), query_vector)
    rows = [(row.evidence or Evidence(None, None), row.estimate, labels.get(row.key[1], frozenset()))
            for row in (ranked or [])[: request.limit]]
    return ScoredQuery(dataset, relevant, rows)


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """The probability that a random positive scores above a random negative (ties count half)."""
    if not positives or not negatives:
        return float("nan")
    ordered = sorted(negatives)
    total = 0.0
    import bisect

    for value in positives:
        below = bisect.bisect_left(ordered, value)
        ties = bisect.bisect_right(ordered, value) - below
        total += below + ties / 2
    return total / (len(positives) * len(negatives))


@dataclass
class NegativesReport:
    """Per data set: negatives empty, recall@10 with and without the floor, AUROC of the top score.
    ``floor`` is the ``min_score`` the queries are read with (None: the default floor)."""

    floor: float | None = None
    lines: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, dataset: str, queries: Sequence[ScoredQuery]) -> dict[str, Any]:
        pos = [q for q in queries if q.positive]
        neg = [q for q in queries if not q.positive]
        line = {
            "positives": len(pos), "negatives": len(neg),
            "negatives_empty": sum(1 for q in neg if q.top(self.floor) == 0.0) / len(neg) if neg else float("nan"),
            "recall_full": sum(q.recall(0.0) for q in pos) / len(pos) if pos else float("nan"),
            "recall_floor": sum(q.recall(self.floor) for q in pos) / len(pos) if pos else float("nan"),
            "auroc": auroc([q.top(0.0) for q in pos], [q.top(0.0) for q in neg]),
        }
        line["recall_drop"] = line["recall_full"] - line["recall_floor"]
        self.lines[dataset] = line
        return line

    def render(self) -> str:
        floor = "the default floor" if self.floor is None else f"min_score {self.floor}"
        out = [f"Negatives at {floor}", "",
               "| data set | positives | negatives | negatives empty | R@10 (min_score 0) | R@10 (floor) | drop"
               " | AUROC top score |",
               "|---|---|---|---|---|---|---|---|"]
        for name, x in self.lines.items():
            out.append(f"| {name} | {x['positives']} | {x['negatives']} | {x['negatives_empty']:.3f} | {x['recall_full']:.3f} |"
                       f" {x['recall_floor']:.3f} | {x['recall_drop']:.3f} | {x['auroc']:.3f} |")
        return "\n".join(out)
