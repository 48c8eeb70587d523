"""`memory-engine eval --variant`: a named row of per-signal weights next to the presets."""

from __future__ import annotations

from memory_engine.cli.eval import parse_variants
from memory_engine.domain.search_config import HYBRID, Signal


def test_a_variant_sets_the_weights_it_names_and_keeps_the_others() -> None:
    variants = parse_variants(["kw2=vector:1,keyword:2,entity:0"])
    config = variants["kw2"]
    assert config.signals == frozenset({Signal.VECTOR, Signal.KEYWORD})  # weight 0 drops the signal
    assert config.weight(Signal.KEYWORD) == 2.0
    # the date list is not a signal a variant names: it keeps the hybrid's weight
    assert config.weight(Signal.DATE) == HYBRID.weight(Signal.DATE) == 0.5
    assert config.date_boost == HYBRID.date_boost
