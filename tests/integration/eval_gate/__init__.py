"""The quality gate: bounded runs of the real evaluations fail when search falls below the figures
it reached (docs/retrieval.md, "CI gate") minus a small margin.

The runs are deterministic for a given code, model and data (exact statistics on these small
scopes; the HNSW graphs hold every row within ``ef_search``), so the margin only absorbs what an
index rebuild may reorder, not noise. Each gate is a module of its own, so the suite's two workers
(``--dist loadfile``) run them side by side; tests/conftest.py starts the slow modules first.
Measured with ``.venv/bin/python -m pytest tests/integration/eval_gate -s``.
"""

MARGIN = 0.02
