"""bench/statement_ab.py carries a captured statement's parameters through JSON to the replay unchanged."""

from __future__ import annotations

import json
from types import ModuleType

import numpy as np
import pytest

from memory_engine.adapters.postgres.lanes import PlanValue
from tests.support.bench import bench_module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return bench_module("statement_ab")


def test_parameters_survive_json_and_plan_values_are_left_to_the_text(bench: ModuleType) -> None:
    vector = np.asarray([0.25, -1.5, 3.0], dtype=np.float32)
    params = {"embedding": vector, "ids": ["a", "b"], "shares": '{"cell": 0.08}', "n": 100000, "avgdl": 12.5,
              "text": "tea or coffee", "depth": PlanValue(30), "top": []}
    encoded = json.loads(json.dumps(bench.encode_params(params)))
    assert "depth" not in encoded  # written into the statement's text when it was sent
    decoded = bench.decode_params(encoded)
    assert isinstance(decoded["embedding"], np.ndarray) and decoded["embedding"].dtype == np.float32
    np.testing.assert_array_equal(decoded["embedding"], vector)
    assert {k: v for k, v in decoded.items() if k != "embedding"} == {
        "ids": ["a", "b"], "shares": '{"cell": 0.08}', "n": 100000, "avgdl": 12.5, "text": "tea or coffee", "top": []}


def test_no_parameters_encode_to_none(bench: ModuleType) -> None:
    assert bench.encode_params(None) == {}
    assert bench.decode_params({}) == {}
