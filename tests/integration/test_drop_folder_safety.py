"""The drop folder and upload URLs refuse what they must, say so once, and never loop (issue 11,
defects 3, 4 and 10)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_engine.bootstrap import Container
from memory_engine.errors import InvalidInput
from memory_engine.local.drop_folder import DropFolderWatcher
from memory_engine.services.ingestion.documents import (
    UPLOAD_EXPIRED_ERROR,
    UPLOAD_URL_TTL_SECONDS,
    expire_unused_uploads,
)
from memory_engine.services.keys import create_api_key
from tests.support.api_client import ApiClient


def _watcher(container: Container, root: Path) -> DropFolderWatcher:
    return DropFolderWatcher(container, root, stable_seconds=1.0)


def _settle(watcher: DropFolderWatcher, start: float = 0.0) -> list[str]:
    """Two scans a stability period apart: the runs started."""
    return watcher.scan(now=start) + watcher.scan(now=start + 1.5)


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(1 for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage())


@pytest.fixture
def root(container: Container, tmp_path: Path) -> Path:
    container.projects.get_or_create_project("acme")
    return tmp_path / "drop"


def test_project_names_are_slugs_wherever_projects_are_created(container: Container) -> None:
    for name in ("x/../acme", "../acme", "Acme", ".hidden"):
        with pytest.raises(InvalidInput, match="invalid project name"):
            container.projects.get_or_create_project(name)
        with pytest.raises(InvalidInput):
            create_api_key(container.projects, project_name=name, scopes=frozenset())
    assert all("/" not in p.name for p in container.projects.list_projects())


def test_symlinks_are_never_followed(container: Container, root: Path, tmp_path: Path,
                                     caplog: pytest.LogCaptureFixture) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("server secret")
    (root / "acme").mkdir(parents=True)
    (root / "acme" / "link.txt").symlink_to(secret)
    (root / "acme" / "linked-dir").symlink_to(secret.parent, target_is_directory=True)
    watcher = _watcher(container, root)
    with caplog.at_level(logging.WARNING):
        assert _settle(watcher) == [] and _settle(watcher, 10.0) == []
    assert _warnings(caplog, "symbolic link") == 2  # each said once
    acme = container.projects.get_project("acme")
    assert acme is not None and container.documents.find_by_path(acme.id, "/link.txt") is None


def test_a_file_at_the_drop_root_warns_once(container: Container, root: Path, caplog: pytest.LogCaptureFixture) -> None:
    root.mkdir(parents=True)
    (root / "stray.txt").write_text("no project")
    watcher = _watcher(container, root)
    with caplog.at_level(logging.WARNING):
        for i in range(5):
            assert _settle(watcher, i * 10.0) == []
    assert _warnings(caplog, "belong to no project") == 1


def test_an_unknown_project_folder_is_refused_once_and_never_created(
    container: Container, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (root / "nobody").mkdir(parents=True)
    (root / "nobody" / "a.txt").write_text("a")
    (root / "nobody" / "b.txt").write_text("b")
    (root / "Not A Slug").mkdir()
    (root / "Not A Slug" / "c.txt").write_text("c")
    watcher = _watcher(container, root)
    with caplog.at_level(logging.WARNING):
        for i in range(3):
            assert _settle(watcher, i * 10.0) == []
    assert _warnings(caplog, "no project is named 'nobody'") == 1
    assert _warnings(caplog, "invalid project name") == 1
    assert container.projects.get_project("nobody") is None
    # once the project exists (created explicitly), its files are taken
    container.projects.get_or_create_project("nobody")
    runs = _settle(watcher, 100.0)
    assert len(runs) == 2
    for run in runs:
        assert container.pipeline_starter.result(run, timeout=60).status == "succeeded"


def test_an_invalid_path_is_refused_once(container: Container, root: Path, caplog: pytest.LogCaptureFixture) -> None:
    # (a segment over 255 bytes cannot exist on disk; a control character can, and the same rule refuses it)
    folder = root / "acme" / "notes"
    folder.mkdir(parents=True)
    (folder / "line\nbreak.md").write_text("x")
    watcher = _watcher(container, root)
    with caplog.at_level(logging.WARNING):
        assert _settle(watcher) == [] and _settle(watcher, 10.0) == []
    assert _warnings(caplog, "control characters") == 1


def test_an_unchanged_failed_file_is_not_ingested_again_after_a_restart(
    container: Container, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a dropped file whose ingestion fails (a PDF that is not one)
    bad = root / "acme" / "broken.pdf"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"%PDF-1.4 this is not really a pdf")
    (run,) = _settle(_watcher(container, root))
    container.pipeline_starter.result(run, timeout=60)
    acme = container.projects.get_project("acme")
    assert acme is not None
    doc = container.documents.find_by_path(acme.id, "/broken.pdf")
    assert doc is not None and doc.status.value == "failed"
    # When the engine restarts (a new watcher) with the file unchanged, Then it is not taken again
    with caplog.at_level(logging.WARNING):
        assert _settle(_watcher(container, root)) == []
    assert _warnings(caplog, "unchanged since its ingestion failed") == 1
    # and once the file changes, it is
    bad.write_bytes(b"%PDF-1.4 still not a pdf, but different")
    assert len(_settle(_watcher(container, root), 50.0)) == 1


def test_unused_upload_urls_expire_their_pending_documents(api: ApiClient, container: Container) -> None:
    r = api.post("/v1/documents/uploads", {"path": "/never/uploaded.pdf"})
    assert r.status == 201
    doc_id = r.json["key"] and api.get("/v1/documents", params={"path_prefix": "/never/"}).json["data"][0]["id"]
    ports = container.ingestion_ports
    assert expire_unused_uploads(ports, now=datetime.now(UTC)) == 0  # not yet expired
    later = datetime.now(UTC) + timedelta(seconds=UPLOAD_URL_TTL_SECONDS + 600)
    assert expire_unused_uploads(ports, now=later) >= 1
    status = api.get(f"/v1/documents/{doc_id}/status").json
    assert status["status"] == "failed" and status["error"] == UPLOAD_EXPIRED_ERROR
