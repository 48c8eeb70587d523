"""Reciprocal Rank Fusion: combine ranked lists by position only, never by raw score.

``score(item) = Σ_lists weight_list / (k + rank_in_list)`` with 1-based ranks and ``k = 60``
(Cormack et al., 2009). Cosine similarity, ``ts_rank`` and "touches an anchor entity" are not
on comparable scales; ranks are, so fusion needs no calibration that a model change would break.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

#: The RRF constant from the original paper and the Memory Soda design.
RRF_K = 60

K = TypeVar("K", bound=Hashable)
#: What names a list (a string, or search's ``(source, signal)`` pair).
N = TypeVar("N", bound=Hashable)


@dataclass(frozen=True)
class Fused(Generic[K, N]):
    """One fused item: its key, fused score and its 1-based rank in every list that had it."""

    key: K
    score: float
    ranks: dict[N, int] = field(default_factory=dict)


def rrf(
    ranked_lists: Mapping[N, Sequence[K]],
    *,
    k: int = RRF_K,
    weights: Mapping[N, float] | None = None,
) -> list[Fused[K, N]]:
    """Fuse ``{list name: keys best first}`` into one ranking, best first.

    A key repeated inside one list counts once, at its best rank. ``weights`` scales a list's
    contribution (missing names weigh 1.0; weighted RRF is still rank-only). Ties are broken
    deterministically: more lists agreeing first, then the best single rank, then first
    appearance in the lists (in the mapping's order). Raises ``ValueError`` for ``k < 0`` or a
    negative weight.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[K, float] = {}
    ranks: dict[K, dict[N, int]] = {}
    first_seen: dict[K, int] = {}
    for name, keys in ranked_lists.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        if weight < 0:
            raise ValueError(f"weight of {name!r} must be >= 0")
        for position, key in enumerate(keys, start=1):
            item_ranks = ranks.setdefault(key, {})
            if name in item_ranks:
                continue
            item_ranks[name] = position
            first_seen.setdefault(key, len(first_seen))
            scores[key] = scores.get(key, 0.0) + weight / (k + position)
    ordered = sorted(
        scores,
        key=lambda key: (-scores[key], -len(ranks[key]), min(ranks[key].values()), first_seen[key]),
    )
    return [Fused(key, scores[key], ranks[key]) for key in ordered]
