"""`memory-engine events send`: to a running local server (a real socket), and in-process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.cli import main
from memory_engine.local.http_gateway import LocalGateway
from memory_engine.ports.chat import ChatModel
from tests.support.extraction import ScriptedChatModel, fact, turn_event


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    return ScriptedChatModel()


@pytest.fixture(scope="module")
def server(container: Container) -> Iterator[str]:
    gateway = LocalGateway("127.0.0.1", 0)
    gateway.start()
    yield gateway.base_url
    gateway.stop()
    container.event_queue.stop()


def _write(tmp_path: Path, event: dict[str, Any]) -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    return path


def test_send_posts_to_the_local_server_and_waits_for_the_run(
    container: Container, server: str, make_key: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a running server, a key and an event file
    project_id = container.projects.get_or_create_project("acme").id
    memory_id = container.memories.create(project_id, name="cli").id
    container.chat_model.script(json.dumps([fact("Sam is a nurse.", "Sam", "is", "a nurse", ("Sam", "person"))]))  # type: ignore[attr-defined]
    path = _write(tmp_path, turn_event(project_id=project_id, memory_id=memory_id))
    # When it is sent with --wait
    code = main(["events", "send", str(path), "--url", server, "--key", make_key("acme", "write"), "--wait"])
    # Then the server ran the consumer and answered with the run
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and out["http_status"] == 200
    assert out["run"]["status"] == "completed" and out["run"]["summary"]["created"] == 1


def test_send_reports_a_rejected_event_with_a_failing_exit_code(
    container: Container, server: str, make_key: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, turn_event(project_id=container.projects.get_or_create_project("acme").id, memory_id="mem_x"))
    code = main(["events", "send", str(path), "--url", server, "--key", make_key("acme", "write")])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 1 and out["http_status"] == 404


def test_send_in_process_stores_the_episode_and_records_no_model_configured(
    fresh_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    embedder: Any,
) -> None:
    # Given a local database with a memory and no chat model configured (the local default)
    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    monkeypatch.setenv("MEMORY_ENGINE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CHAT_PROVIDER", raising=False)
    from memory_engine.settings import Settings

    setup = Container(Settings(), embedder=embedder)
    project_id = setup.projects.get_or_create_project("default").id
    memory_id = setup.memories.create(project_id, name="cli").id
    event = turn_event(project_id=project_id, memory_id=memory_id)
    # When the event is sent with no server running
    code = main(["events", "send", str(_write(tmp_path, event)), "--in-process"])
    # Then the consumer ran here: the episode is stored and the run says why nothing was extracted
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and out["status"] == "succeeded"
    assert out["run"]["status"] == "failed" and out["run"]["error"] == "no model configured"
    assert setup.episodes.get_by_event(project_id, event["id"]) is not None
    setup.close()
