"""``preset`` in a search request picks a named search config (the console compares hybrid and vector_only)."""

from __future__ import annotations

import typing

import pytest
from pydantic import ValidationError

from memory_engine.domain.search_config import HYBRID, PRESETS, VECTOR_ONLY, Signal
from memory_engine.domain.search_models import PresetName, SearchRequest
from memory_engine.services.search_knowledge import _config_for


def test_the_preset_names_are_the_presets() -> None:
    assert set(typing.get_args(PresetName)) == set(PRESETS)


def test_a_preset_replaces_the_default_config_and_signals_narrow_it() -> None:
    assert _config_for(SearchRequest(query="q"), HYBRID) == HYBRID
    assert _config_for(SearchRequest(query="q", preset="vector_only"), HYBRID) == VECTOR_ONLY
    narrowed = _config_for(SearchRequest(query="q", preset="rrf_v1", signals=["keyword"]), HYBRID)
    assert narrowed.fusion == "rrf" and narrowed.signals == frozenset({Signal.KEYWORD})


def test_an_unknown_preset_is_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        SearchRequest(query="q", preset="best")  # type: ignore[arg-type]
