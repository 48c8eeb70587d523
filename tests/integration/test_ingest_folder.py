"""`memory-engine ingest FOLDER`: every file through the pipeline in one process, one summary,
broken files failed with their reasons and the rest ready; a second run finds them unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_engine.bootstrap import Container
from memory_engine.cli import main
from memory_engine.domain.documents import MAX_DOCUMENT_BYTES


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    (root / "guides" / "deep").mkdir(parents=True)
    (root / "guides" / "fjords.md").write_text("# Fjords\n\nA fjord is a long narrow inlet carved by a glacier.")
    (root / "guides" / "deep" / "moraine.txt").write_text("A moraine is rock and soil left behind by a glacier.")
    (root / "notes.txt").write_text("Glaciers move a few metres per day.")
    (root / "empty.txt").write_text("")
    (root / "scan.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(2000))  # a PDF header and noise
    with (root / "huge.txt").open("wb") as f:
        f.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: over the limit without writing 50 MB
    (root / ".hidden.txt").write_text("not ingested")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main")
    (root / "link.txt").symlink_to(root / "notes.txt")
    return root


def test_a_folder_is_ingested_with_one_summary_and_broken_files_fail_with_their_reason(
    container: Container, database_url: str, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_ENGINE_HOME", str(tmp_path / "home"))
    # When the folder is ingested into project "wikis"
    code = main(["ingest", str(folder), "--project", "wikis"])
    out = capsys.readouterr().out
    # Then the summary counts every visible regular file, and the run fails because three files did
    assert code == 1, out
    assert "6 files" in out and "3 ready, 0 unchanged, 3 failed" in out, out
    failures = {line.split(": ", 1)[0].removeprefix("  failed "): line.split(": ", 1)[1]
                for line in out.splitlines() if line.startswith("  failed ")}
    assert set(failures) == {"/wiki/empty.txt", "/wiki/scan.pdf", "/wiki/huge.txt"}
    assert "no text" in failures["/wiki/empty.txt"]
    assert "limit" in failures["/wiki/huge.txt"]
    # And the good files are searchable documents under /wiki/, the broken ones failed with the same reason
    project = container.projects.get_project("wikis")
    assert project is not None
    docs, _ = container.documents.list_documents(project.id, path_prefix="/wiki/", tags=[], status=None, limit=100,
                                                 cursor=None)
    status = {d.path: (d.status.value, d.error) for d in docs}
    assert {p for p, (s, _) in status.items() if s == "ready"} == {
        "/wiki/guides/fjords.md", "/wiki/guides/deep/moraine.txt", "/wiki/notes.txt"}
    assert all(status[p] == ("failed", failures[p]) for p in failures)
    # When it runs again with --include, only matching files are taken and the unchanged ones are skipped
    code = main(["ingest", str(folder), "--project", "wikis", "--include", "*.md", "--include", "guides/deep/*"])
    out = capsys.readouterr().out
    assert code == 0 and "2 files" in out and "0 ready, 2 unchanged, 0 failed" in out, out


def test_an_empty_selection_is_a_usage_error(folder: Path, database_url: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_ENGINE_HOME", str(tmp_path / "home"))
    assert main(["ingest", str(folder), "--include", "*.docx"]) == 2
    assert "nothing to ingest" in capsys.readouterr().err
