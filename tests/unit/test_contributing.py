"""CONTRIBUTING.md walks a search request and an S3 upload through the files: every file it names exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "layers" / "core" / "memory_engine"


def test_every_file_contributing_names_exists() -> None:
    text = (REPO / "CONTRIBUTING.md").read_text("utf-8")
    named = set(re.findall(r"`([\w./-]+\.(?:py|md|sql|json))`", text))
    # the how-to sections' templates (`.../_core.py`, `NNNN_what_it_does.sql`) and a module (`psycopg.sql`)
    named = {n for n in named if "..." not in n and "NNNN" not in n and n != "psycopg.sql"}
    assert len(named) > 20
    # a path from the repository root, else one relative to the package (e.g. `services/...`), else a bare
    # module name next to the one named before it in the walkthrough (e.g. `bm25.py` of adapters/postgres)
    missing = [name for name in sorted(named)
               if not (REPO / name).exists() and not (PACKAGE / name).exists() and not list(PACKAGE.rglob(name))]
    assert missing == []
