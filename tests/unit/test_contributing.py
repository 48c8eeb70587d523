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


def _test_references(line: str) -> list[tuple[str, str | None]]:
    """``(test file, test name or None)`` for each ``tests/....py[::test_x]`` in a line; a bare ``::test_x``
    after one names a test of the file named last."""
    found: list[tuple[str, str | None]] = []
    current = None
    for path, name, continued in re.findall(r"(tests/[\w/]+\.py)(?:::(\w+))?|`::(test_\w+)`", line):
        current = path or current
        if current:
            found.append((current, name or continued or None))
    return found


def test_every_test_the_docs_cite_exists_where_they_say() -> None:
    documents = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md")),
                 *sorted((REPO / "infra").glob("*.md"))]
    defined: dict[str, set[str]] = {}
    problems = []
    for document in documents:
        for number, line in enumerate(document.read_text("utf-8").splitlines(), start=1):
            for path, name in _test_references(line):
                if not (REPO / path).is_file():
                    problems.append(f"{document.name}:{number}: {path} does not exist")
                    continue
                if path not in defined:
                    defined[path] = set(re.findall(r"^(?:async )?def (test_\w+)", (REPO / path).read_text("utf-8"), re.M))
                if name and name.startswith("test_") and name not in defined[path]:
                    problems.append(f"{document.name}:{number}: {path} has no {name}")
    assert len(defined) > 20  # the docs cite tests: the pattern still finds them
    assert problems == []


def test_a_bare_test_name_belongs_to_the_file_cited_before_it() -> None:
    line = "`tests/a/test_x.py::test_one`, `::test_two`; `tests/b/test_y.py` (`::test_three`)"
    assert _test_references(line) == [("tests/a/test_x.py", "test_one"), ("tests/a/test_x.py", "test_two"),
                                      ("tests/b/test_y.py", None), ("tests/b/test_y.py", "test_three")]
