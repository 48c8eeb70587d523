"""bench/peer_systems/mempalace.py on a hand-made palace: MemPalace embeds with the shared vectors only (never
its own model, which it cannot download here), searches within the wing asked for, and every result maps
back to its unit's label.

MemPalace is part of the optional ``peers`` extra; without it the test skips, like the peers smoke test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
UNITS = {  # conversation -> (label, text); every text its own axis of the vector space
    "conv-a": [("A:1", "I adopted a grey cat called Miso last spring"), ("A:2", "We drove to the coast for the weekend"),
               ("A:3", "My sister teaches chemistry at the high school")],
    "conv-b": [("B:1", "The bakery on Elm street sells rye bread"), ("B:2", "I adopted a grey cat called Miso last spring")],
}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, Any]]:
    if importlib.util.find_spec("mempalace") is None:
        pytest.skip("mempalace is not installed: the `peers` extra is optional (`make bench-peers` installs it)")
    saved_env, saved_path = dict(os.environ), list(sys.path)
    sys.path.insert(0, str(BENCH))
    from peer_systems.base import Dataset, Query, Unit, VectorCache

    units = [Unit(text, group, label, {}) for group, rows in UNITS.items() for label, text in rows]
    texts = list(dict.fromkeys(u.text for u in units))
    queries = {"cat": "which pet did they adopt", "chemistry": "what does the sister teach"}
    axes = {text: i for i, text in enumerate(texts + list(queries.values()))}
    vectors = np.eye(len(axes), 384, dtype=np.float32)
    # each query points at the text that answers it (cosine 0.8), away from every other one
    for query, answer in (("cat", texts[0]), ("chemistry", texts[2])):
        vectors[axes[queries[query]]] = 0.6 * vectors[axes[queries[query]]] + 0.8 * vectors[axes[answer]]
    (tmp_path / "texts-t.json").write_text(json.dumps(list(axes)), "utf-8")
    np.save(tmp_path / "vectors-t.npy", vectors)
    cache = VectorCache(tmp_path, "t", tmp_path / "model-cache")
    make_query = lambda key, group, label: Query(queries[key], group, frozenset({label}), {label: 1.0}, "x")  # noqa: E731
    try:
        yield {"dataset": Dataset("t", units, []), "cache": cache, "home": tmp_path / "home", "query": make_query}
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path


def test_mempalace_ranks_from_the_shared_vectors_within_the_wing(env: dict[str, Any]) -> None:
    from peer_systems.mempalace import MemPalace

    # Given a palace loaded with two conversations through MemPalace's own write path
    system = MemPalace("", env["home"], env["cache"])
    system.setup(env["dataset"])
    system.load(env["dataset"])
    for row in MemPalace.rows:
        # When a question is searched in conversation a, with either candidate strategy
        cat = system.search(row, env["query"]("cat", "conv-a", "A:1"))
        chemistry = system.search(row, env["query"]("chemistry", "conv-a", "A:3"))
        # Then the turn that answers it comes first, and only conversation a's turns come back
        assert cat[0] == frozenset({"A:1"}), (row, cat)
        assert chemistry[0] == frozenset({"A:3"}), (row, chemistry)
        assert {label for hit in cat + chemistry for label in hit} <= {"A:1", "A:2", "A:3"}
        # And the same text in conversation b answers there with b's own label
        assert system.search(row, env["query"]("cat", "conv-b", "B:2"))[0] == frozenset({"B:2"})
    # And every vector MemPalace asked for came from the shared cache: its own model never loaded
    assert env["cache"].missed == []
