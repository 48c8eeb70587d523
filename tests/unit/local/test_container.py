"""The local runtime's composition root, without a database: what it adds to the base container
and what the base container refuses to stand in for."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_engine.adapters.local.event_sinks import LocalDeadLetters
from memory_engine.adapters.local.upload_inbox import DropFolderInbox
from memory_engine.adapters.s3.blob_store import S3BlobStore
from memory_engine.bootstrap import Container
from memory_engine.errors import ConfigurationError
from memory_engine.local.container import LocalContainer
from memory_engine.local.pipeline import LocalPipelineStarter
from memory_engine.ports.events import DeadLetter
from memory_engine.settings import Settings


def _settings(home: Path) -> Settings:
    return Settings(MEMORY_ENGINE_HOME=str(home))  # type: ignore[call-arg]


def test_the_base_container_has_no_local_runtime_pieces(tmp_path: Path) -> None:
    base = Container(_settings(tmp_path))
    with pytest.raises(ConfigurationError, match="INGESTION_STATE_MACHINE_ARN"):
        _ = base.pipeline_starter
    with pytest.raises(ConfigurationError, match="local runtime"):
        _ = base.event_queue
    assert base.upload_inbox is None


def test_the_local_container_runs_the_pipeline_and_the_queue_in_process(tmp_path: Path) -> None:
    local = LocalContainer(_settings(tmp_path), dead_letter_folder=tmp_path / "dead-letters")
    starter = local.pipeline_starter
    assert isinstance(starter, LocalPipelineStarter)
    # the queue parks its dead letters in the container's sink, which also writes the folder
    sink = local.dead_letters
    assert isinstance(sink, LocalDeadLetters) and local.event_queue._dead_letters is sink
    sink.send(DeadLetter("m-1", "{}", "test"))
    assert (tmp_path / "dead-letters" / "m-1.json").exists()
    assert isinstance(local.upload_inbox, DropFolderInbox) and local.upload_inbox.drop_root == tmp_path / "drop"
    local.close()  # shuts the starter's threads down
    with pytest.raises(RuntimeError):
        starter.start({"detail": {}})


def test_with_an_s3_store_there_is_no_upload_inbox(tmp_path: Path) -> None:
    local = LocalContainer(_settings(tmp_path), blob_store=S3BlobStore(object(), "bucket"))
    assert local.upload_inbox is None
