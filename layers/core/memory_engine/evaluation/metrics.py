"""Ranking metrics (pure): recall@k, reciprocal rank, nDCG@k, and their per-group means."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


def recall_at_k(ranked: Sequence[frozenset[str]], relevant: frozenset[str], k: int) -> float:
    """Share of ``relevant`` labels found in the first ``k`` results (each result carries labels)."""
    if not relevant:
        return 0.0
    found: set[str] = set()
    for labels in ranked[:k]:
        found |= labels & relevant
    return len(found) / len(relevant)


def reciprocal_rank(ranked: Sequence[frozenset[str]], relevant: frozenset[str], k: int | None = None) -> float:
    for position, labels in enumerate(ranked[:k] if k else ranked, start=1):
        if labels & relevant:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranked: Sequence[frozenset[str]], gains: Mapping[str, float], k: int) -> float:
    """Normalized DCG with graded ``gains``; a label counts once, at its first position."""
    seen: set[str] = set()
    dcg = 0.0
    for position, labels in enumerate(ranked[:k], start=1):
        gain = sum(gains.get(label, 0.0) for label in labels - seen)
        seen |= labels
        dcg += gain / math.log2(position + 1)
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


@dataclass
class MetricTable:
    """Per (row, group) lists of per-query metric values; means on demand."""

    metrics: tuple[str, ...]
    values: dict[tuple[str, str], dict[str, list[float]]] = field(default_factory=dict)

    def add(self, row: str, groups: Iterable[str], **metric_values: float) -> None:
        for group in groups:
            cell = self.values.setdefault((row, group), {m: [] for m in self.metrics})
            for name, value in metric_values.items():
                cell[name].append(value)

    def mean(self, row: str, group: str, metric: str) -> float:
        data = self.values.get((row, group), {}).get(metric, [])
        return sum(data) / len(data) if data else float("nan")

    def count(self, row: str, group: str) -> int:
        cell = self.values.get((row, group))
        return len(next(iter(cell.values()))) if cell else 0

    def rows(self) -> list[str]:
        return list(dict.fromkeys(r for r, _ in self.values))

    def groups(self) -> list[str]:
        return list(dict.fromkeys(g for _, g in self.values))

    def render(self, title: str) -> str:
        """A Markdown table: one line per row, one column per (group, metric)."""
        groups = self.groups()
        header = ["config"] + [f"{g} {m}" for g in groups for m in self.metrics]
        lines = [f"{title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in self.rows():
            cells = [f"{self.mean(row, g, m):.3f}" for g in groups for m in self.metrics]
            lines.append("| " + " | ".join([row, *cells]) + " |")
        counts = ", ".join(f"{g}: {self.count(self.rows()[0], g)}" for g in groups) if self.rows() else ""
        lines.append("")
        lines.append(f"queries per group: {counts}")
        return "\n".join(lines)
