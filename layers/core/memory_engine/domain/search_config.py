"""Retrieval as typed, declarative config: which signals run, how deep, and how they fuse.

The API builds a :class:`SearchConfig` from the request (``signals`` picks a subset of the
``hybrid`` preset); the evaluation harness runs the named presets side by side, so the numbers
in docs/retrieval.md are produced by exactly the configs the API serves.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from memory_engine.domain.rrf import RRF_K


class Signal(str, Enum):
    """One ranked candidate list fused by RRF."""

    VECTOR = "vector"
    KEYWORD = "keyword"
    ENTITY = "entity"
    #: Most recent live facts first; only added when the query could not be embedded.
    RECENCY = "recency"


#: Signals a caller may ask for (``recency`` is the degraded-mode stand-in, never requested).
REQUESTABLE_SIGNALS = (Signal.VECTOR, Signal.KEYWORD, Signal.ENTITY)


class SearchConfig(BaseModel):
    """How one search runs. Immutable; derive variants with :meth:`with_signals`."""

    model_config = ConfigDict(frozen=True)

    signals: frozenset[Signal] = frozenset(REQUESTABLE_SIGNALS)
    #: RRF constant.
    rrf_k: int = Field(RRF_K, ge=0)
    #: Per-signal multipliers of the RRF contribution (missing = 1.0).
    weights: dict[Signal, float] = Field(default_factory=dict)
    #: Each signal returns ``max(limit * depth_factor, min_depth)`` candidates per source.
    depth_factor: int = Field(3, ge=1)
    min_depth: int = Field(30, ge=1)
    max_depth: int = Field(200, ge=1)
    #: Anchor entities by similarity: the top ``entity_top_k`` with cosine >= ``entity_min_similarity``.
    entity_top_k: int = Field(3, ge=0)
    entity_min_similarity: float = Field(0.75, ge=-1.0, le=1.0)
    #: HNSW candidate list size (pgvector ``hnsw.ef_search``); iterative scans extend it for filters.
    ef_search: int = Field(100, ge=1, le=1000)

    def depth(self, limit: int) -> int:
        """How many candidates each signal contributes for a result page of ``limit``."""
        return min(max(limit * self.depth_factor, self.min_depth), self.max_depth)

    def weight(self, signal: Signal) -> float:
        return self.weights.get(signal, 1.0)

    def with_signals(self, signals: frozenset[Signal] | set[Signal]) -> SearchConfig:
        return self.model_copy(update={"signals": frozenset(signals)})

    def uses(self, signal: Signal) -> bool:
        return signal in self.signals


HYBRID = SearchConfig()
VECTOR_ONLY = HYBRID.with_signals({Signal.VECTOR})
KEYWORD_ONLY = HYBRID.with_signals({Signal.KEYWORD})
ENTITY_ONLY = HYBRID.with_signals({Signal.ENTITY})

#: Named presets (graphiti's ``search_config_recipes`` idea): the API default is ``hybrid``.
PRESETS: dict[str, SearchConfig] = {
    "hybrid": HYBRID,
    "vector_only": VECTOR_ONLY,
    "keyword_only": KEYWORD_ONLY,
    "entity_only": ENTITY_ONLY,
}


def preset(name: str) -> SearchConfig:
    """The preset called ``name``; raises ``KeyError`` listing the known names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown search preset {name!r}; known: {', '.join(PRESETS)}") from None
