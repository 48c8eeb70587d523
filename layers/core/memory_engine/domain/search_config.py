"""Retrieval as typed, declarative config: which signals run, how deep, and how they fuse.

The API builds a :class:`SearchConfig` from the request (``signals`` picks a subset of the
``hybrid`` preset); the evaluation harness runs the named presets side by side, so the numbers
in docs/retrieval.md are produced by exactly the configs the API serves.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_engine.domain.rrf import RRF_K


class Signal(str, Enum):
    """One ranked candidate list (domain/fusion.py combines them)."""

    VECTOR = "vector"
    KEYWORD = "keyword"
    ENTITY = "entity"
    #: Most recent live facts first; only added when the query could not be embedded.
    RECENCY = "recency"
    #: Live facts on a date or period the query names, nearest to the query first; only added when
    #: the query names one and the config has a ``date_boost`` (the boost can only lift a row some
    #: list found: "what did we discuss on 11 December, 2023?" names the day, not the topic).
    DATE = "date"


#: Signals a caller may ask for (``recency`` is the degraded-mode stand-in, never requested).
REQUESTABLE_SIGNALS = (Signal.VECTOR, Signal.KEYWORD, Signal.ENTITY)


class SearchConfig(BaseModel):
    """How one search runs. Immutable; derive variants with :meth:`with_signals`."""

    model_config = ConfigDict(frozen=True)

    signals: frozenset[Signal] = frozenset(REQUESTABLE_SIGNALS)
    #: ``convex``: weighted sum of normalized scores plus query features and neighbour context
    #: (domain/fusion.py); ``rrf``: Reciprocal Rank Fusion of the lists alone (search v1).
    fusion: Literal["convex", "rrf"] = "convex"
    #: RRF constant (``fusion="rrf"``).
    rrf_k: int = Field(RRF_K, ge=0)
    #: Per-signal weights (missing = 1.0): of the normalized score (convex) or of the RRF term.
    #: The two rank-only lists of rows the query names (an entity, a date) weigh 0.5.
    weights: dict[Signal, float] = Field(default_factory=lambda: {Signal.ENTITY: 0.5, Signal.DATE: 0.5})
    #: Added when the fact's subject entity is named in the query (convex only).
    subject_boost: float = Field(0.6, ge=0.0)
    #: Added when the fact's ``valid_from`` falls on a date or period the query names (convex only);
    #: when it is above 0, such facts are also a candidate list of their own (``Signal.DATE``).
    date_boost: float = Field(0.4, ge=0.0)
    #: Neighbour context (convex only): rows up to ``neighbour_window`` steps away in the same
    #: conversation (facts) or document (chunks) lend ``neighbour_weight`` x their score, times
    #: ``neighbour_decay`` per step beyond the first; the best ``neighbour_expand`` candidates
    #: have their neighbours read even when no signal listed them.
    #: Recency as a tie-breaker (convex only): a fact gains up to ``recency_weight`` by when it
    #: happened (``valid_from``) among the query's candidates, latest most, so of two rows that answer
    #: alike the newer ranks first (a value that changed: "165 commits", not the earlier "150"). Small
    #: beside the signals (each up to 1): it reorders near-ties only.
    recency_weight: float = Field(0.0, ge=0.0)
    #: Of two facts on a page that state the same thing, the newer above the older (convex fusion,
    #: when the vector signal runs; domain/supersession.py): a column of the page's fact read,
    #: comparing the page's facts' stored vectors.
    newer_first: bool = True
    neighbour_window: int = Field(2, ge=0, le=5)
    neighbour_weight: float = Field(0.3, ge=0.0)
    neighbour_decay: float = Field(0.5, ge=0.0, le=1.0)
    neighbour_expand: int = Field(20, ge=0, le=100)
    #: Each signal returns ``max(limit * depth_factor, min_depth)`` candidates per source.
    depth_factor: int = Field(3, ge=1)
    min_depth: int = Field(30, ge=1)
    max_depth: int = Field(200, ge=1)
    #: Anchor entities by similarity: the top ``entity_top_k`` with cosine >= ``entity_min_similarity``.
    entity_top_k: int = Field(3, ge=0)
    entity_min_similarity: float = Field(0.75, ge=-1.0, le=1.0)
    #: HNSW candidate list size (pgvector ``hnsw.ef_search``; raised to the signal's depth when that
    #: is larger); iterative scans extend it for filters. pgvector's default 40: 100 cost 2.5-3 ms more
    #: per HNSW scan at 100k rows (two scans a search, plus the entity one) and changed no evaluation
    #: figure (docs/retrieval.md, "Latency").
    ef_search: int = Field(40, ge=1, le=1000)

    def depth(self, limit: int) -> int:
        """How many candidates each signal contributes for a result page of ``limit``."""
        return min(max(limit * self.depth_factor, self.min_depth), self.max_depth)

    def weight(self, signal: Signal) -> float:
        return self.weights.get(signal, 1.0)

    def with_signals(self, signals: frozenset[Signal] | set[Signal]) -> SearchConfig:
        return self.model_copy(update={"signals": frozenset(signals)})

    def uses(self, signal: Signal) -> bool:
        return signal in self.signals


    def single_signal(self, signal: Signal) -> SearchConfig:
        """One signal alone, ranked by its own score: no query features, no neighbours."""
        return self.model_copy(update={
            "signals": frozenset({signal}), "subject_boost": 0.0, "date_boost": 0.0, "neighbour_window": 0,
            "weights": {signal: 1.0},
        })


HYBRID = SearchConfig()
VECTOR_ONLY = HYBRID.single_signal(Signal.VECTOR)
KEYWORD_ONLY = HYBRID.single_signal(Signal.KEYWORD)
ENTITY_ONLY = HYBRID.single_signal(Signal.ENTITY)
#: Search v1 for comparison: the three signals fused by RRF (k = 60), nothing else.
RRF_V1 = HYBRID.model_copy(update={
    "fusion": "rrf", "weights": {}, "subject_boost": 0.0, "date_boost": 0.0, "neighbour_window": 0,
})

#: Named presets (graphiti's ``search_config_recipes`` idea): the API default is ``hybrid``.
PRESETS: dict[str, SearchConfig] = {
    "hybrid": HYBRID,
    "vector_only": VECTOR_ONLY,
    "keyword_only": KEYWORD_ONLY,
    "entity_only": ENTITY_ONLY,
    "rrf_v1": RRF_V1,
}


def preset(name: str) -> SearchConfig:
    """The preset called ``name``; raises ``KeyError`` listing the known names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown search preset {name!r}; known: {', '.join(PRESETS)}") from None
