"""Newer statements above older ones on a search page (pure; issue 35 section 4).

Of two facts on a page that state the same piece of knowledge, the later one is what holds now
("165 commits", not the earlier "150"): when the older ranks higher, the newer is placed
immediately above it. Only the page's own rows move, so what a page holds (recall@k) is unchanged.

Which facts state the same thing is the write funnel's own rule (domain/write_decision.py): facts
of one memory whose vectors are at least :data:`MIN_SIMILARITY` (``MERGE_FLOOR``) alike are the
ones an agent write sends to arbitration as a possible merge or supersession. It is read only where
a vector is the statement alone: a conversation turn's vector also reads the turn before it, and a
conversation's turns share its topic, so their cosine says little about whether they state the
same thing. Measured on the BEAM dev set (docs/retrieval.md, "Newer facts above older ones"): the
original and the updated message of a knowledge update are no nearer each other than any two rows of
their page (median cosine 0.52 against 0.55), and ordering turns newer first at this band moved
rows on 92 % of BEAM's pages for 3 more of its 32 pairs in order, and took LoCoMo's MRR from 0.607 to
0.377. The index leaves turns out (:meth:`memory_engine.ports.search.KnowledgeIndex.related_statements`).

When a fact held is its ``valid_from``, else when it was written; two facts that held from the same
moment are ordered by when they were written (the later write is the correction).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, TypeVar

from memory_engine.domain.search_models import ResultKey
from memory_engine.domain.write_decision import MERGE_FLOOR

#: Two facts of one memory at least this alike (cosine of their vectors) state the same thing.
MIN_SIMILARITY: Final = MERGE_FLOOR

_T = TypeVar("_T")


@dataclass(frozen=True)
class Held:
    """When a fact held: from ``valid_from`` (else when it was written), then when it was written."""

    since: datetime
    written: datetime

    @property
    def order(self) -> tuple[datetime, datetime]:
        return self.since, self.written


@dataclass(frozen=True)
class Restatement:
    """Two facts of a page that state the same thing (:data:`MIN_SIMILARITY`), each with when it held."""

    first: ResultKey
    first_held: Held
    second: ResultKey
    second_held: Held


def newer_first(rows: Sequence[_T], key: Callable[[_T], ResultKey], restated: Iterable[Restatement]) -> list[_T]:
    """``rows`` (a page, best first) with every fact below a newer statement of the same thing:
    facts linked by ``restated`` (directly or through another fact of the page) form a group; going
    down the page, the newest not yet placed of the group of the highest row left is placed next.
    So a newer fact ranked under an older one moves up to immediately above it, an older one ranked
    under a newer one stays where it is, and a row of no group never moves relative to the others.
    Equal times keep the ranking's order."""
    pairs = list(restated)
    if not pairs:
        return list(rows)
    held: dict[ResultKey, tuple[datetime, datetime]] = {}
    group: dict[ResultKey, ResultKey] = {}

    def root(k: ResultKey) -> ResultKey:
        while group[k] != k:
            group[k] = group[group[k]]
            k = group[k]
        return k

    for pair in pairs:
        for k, when in ((pair.first, pair.first_held), (pair.second, pair.second_held)):
            held[k] = when.order
            group.setdefault(k, k)
        group[root(pair.first)] = root(pair.second)
    rest = list(rows)
    out: list[_T] = []
    while rest:
        top = key(rest[0])
        if top not in group:
            out.append(rest.pop(0))
            continue
        mine = root(top)
        # the newest of the group still to place; ties keep the higher-ranked (max returns the first)
        i = max((i for i, row in enumerate(rest) if key(row) in group and root(key(row)) == mine),
                key=lambda i: held[key(rest[i])])
        out.append(rest.pop(i))
    return out
