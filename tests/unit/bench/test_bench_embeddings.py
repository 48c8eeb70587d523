"""The retrieval metrics and numpy helpers of bench/embeddings.py (and its candidates module), on hand-made examples."""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.support.bench import bench_module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return bench_module("embeddings")


@pytest.fixture(scope="module")
def candidates(bench: ModuleType) -> ModuleType:
    return sys.modules["embedding_candidates"]  # imported by bench/embeddings.py


def test_ndcg_matches_a_hand_computed_value(bench: ModuleType) -> None:
    # Given two relevant documents, one ranked 1st and one ranked 3rd
    ranked = ["a", "x", "b", "y"]
    relevant = {"a": 1, "b": 1}
    # When nDCG@10 is computed
    value = bench.ndcg_at_k(ranked, relevant, 10)
    # Then it is (1/log2(2) + 1/log2(4)) / (1/log2(2) + 1/log2(3))
    assert value == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))


def test_ndcg_is_one_for_the_ideal_ranking_and_zero_without_hits(bench: ModuleType) -> None:
    assert bench.ndcg_at_k(["b", "a", "z"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)
    assert bench.ndcg_at_k(["x", "y"], {"a": 1}, 10) == 0.0
    # a relevant document below the cut-off does not count
    assert bench.ndcg_at_k(["x", "a"], {"a": 1}, 1) == 0.0


def test_recall_counts_relevant_documents_in_the_top_k(bench: ModuleType) -> None:
    assert bench.recall_at_k(["a", "x", "y"], {"a": 1, "b": 1, "c": 1}, 10) == pytest.approx(1 / 3)
    assert bench.recall_at_k(["x", "a"], {"a": 1}, 1) == 0.0


def test_top_k_returns_exact_cosine_order(bench: ModuleType) -> None:
    # Given unit document vectors at known angles from the query
    angles = np.array([0.9, 0.1, 0.5, 1.4, 0.3])
    docs = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    query = np.array([[1.0, 0.0]], dtype=np.float32)
    # When the top 3 are taken, Then they are the three smallest angles, best first
    assert bench.top_k(query, docs, 3).tolist() == [[1, 4, 2]]


def test_erf_approximation_is_accurate(candidates: ModuleType) -> None:
    xs = np.linspace(-4, 4, 81).astype(np.float32)
    expected = np.array([math.erf(float(x)) for x in xs])
    assert np.max(np.abs(candidates._erf(xs) - expected)) < 1e-6


def test_safetensors_reader_round_trips_f32_tensors(candidates: ModuleType, tmp_path: Path) -> None:
    # Given a safetensors file written by hand with one 2x3 tensor
    tensor = np.arange(6, dtype="<f4").reshape(2, 3)
    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, tensor.nbytes]}}).encode()
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + tensor.tobytes())
    # When it is read, Then the tensor comes back unchanged
    assert np.array_equal(candidates._read_safetensors(path)["w"], tensor)
