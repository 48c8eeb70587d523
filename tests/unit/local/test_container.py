"""The local runtime's composition root, without a database: what it adds to the base container
and what the base container refuses to stand in for."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from memory_engine import ports
from memory_engine.adapters.s3.blob_store import S3BlobStore
from memory_engine.bootstrap import Container
from memory_engine.bootstrap_ingestion import OnDatabase
from memory_engine.errors import ConfigurationError
from memory_engine.local.adapters.event_sinks import LocalDeadLetters
from memory_engine.local.adapters.upload_inbox import DropFolderInbox
from memory_engine.local.container import LocalContainer
from memory_engine.local.ingestion_slots import LocalPipelineStarter
from memory_engine.ports.embedder import Embedder, EmbeddingKind
from memory_engine.ports.events import DeadLetter
from memory_engine.settings import Runtime, Settings


def _settings(home: Path) -> Settings:
    return Settings(MEMORY_ENGINE_HOME=str(home))  # type: ignore[call-arg]


def test_the_base_container_has_no_local_runtime_pieces(tmp_path: Path) -> None:
    base = Container(_settings(tmp_path))
    with pytest.raises(ConfigurationError, match="INGESTION_STATE_MACHINE_ARN"):
        _ = base.pipeline_starter
    with pytest.raises(ConfigurationError, match="EXTRACTION_QUEUE_URL"):  # on AWS the queue is SQS
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


def test_search_has_its_own_pool_of_one_connection_per_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    container = Container(Settings(MEMORY_ENGINE_HOME=str(tmp_path), DATABASE_URL="postgresql://x/y"))  # type: ignore[call-arg]
    assert container.search_database is not container.database
    assert container.search_database._max_size == 6 and container.database._max_size == 8
    assert container.knowledge_index._database is container.search_database  # type: ignore[attr-defined]
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert Settings().resolved_search_connections == 2  # two at least: a search runs its signals side by side
    monkeypatch.setenv("MEMORY_ENGINE_SEARCH_CONNECTIONS", "3")
    assert Settings().resolved_search_connections == 3
    container.close()  # neither pool was opened: closing is a no-op, not an error


def test_on_aws_search_shares_the_functions_pool(tmp_path: Path) -> None:
    container = Container(Settings(MEMORY_ENGINE_HOME=str(tmp_path),  # type: ignore[call-arg]
                                   DATABASE_SECRET_ARN="arn:aws:secretsmanager:eu-west-1:123456789012:secret:db"))
    container.__dict__["database"] = database = object()  # no Secrets Manager here: the pool itself is not built
    assert container.search_database is database


def test_an_override_must_name_a_provider(tmp_path: Path) -> None:
    # Given a fake embedder meant for the container, once spelt right and once misspelt
    fake = object()
    # Then the right name pre-fills the provider, and the misspelt one is refused instead of ignored
    assert LocalContainer(_settings(tmp_path), embedder=fake).embedder is fake
    with pytest.raises(TypeError, match="no provider named 'embeder'"):
        LocalContainer(_settings(tmp_path), embeder=fake)
    with pytest.raises(TypeError, match="'check'"):  # a method is not a provider
        Container(_settings(tmp_path), check=lambda function: None)


def test_aws_clients_use_the_standard_retry_mode(tmp_path: Path) -> None:
    client = Container(_settings(tmp_path)).aws.client("sqs")
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 3}


class _Fixed(Embedder):
    dimensions, model_id = 2, "fixed"

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        return [[1.0, 0.0] for _ in texts]


def test_on_aws_no_provider_reaches_for_the_local_runtime(tmp_path: Path) -> None:
    # Given a container on AWS (the Lambda layers do not carry memory_engine.local)
    aws = Container(_settings(tmp_path).model_copy(update={"runtime": Runtime.AWS}), embedder=_Fixed())
    # Then ingestion embeds with the deployment's model, and without a bus a publish is an error, not a log
    assert aws.ingestion_embedder is aws.embedder
    with pytest.raises(ConfigurationError, match="EVENT_BUS_NAME is not set: document.ready"):
        aws.event_publisher.publish("document.ready", {})


def _port(name: str) -> type:
    """The port class ``name`` (an annotation's ``cached_property[Name]``) from ``memory_engine.ports``."""
    for info in pkgutil.iter_modules(ports.__path__):
        module = importlib.import_module(f"{ports.__name__}.{info.name}")
        if isinstance(found := getattr(module, name, None), type):
            return found
    raise AssertionError(f"no port named {name}")


def test_each_postgres_provider_builds_an_adapter_of_its_port_on_its_pool(tmp_path: Path) -> None:
    # Given a container whose pools are never opened (building an adapter must not touch the database)
    container = Container(Settings(MEMORY_ENGINE_HOME=str(tmp_path), DATABASE_URL="postgresql://x/y"))  # type: ignore[call-arg]
    providers = {name: value for cls in reversed(Container.__mro__) for name, value in vars(cls).items()
                 if isinstance(value, OnDatabase)}
    annotations = {name: text for cls in Container.__mro__ for name, text in vars(cls).get("__annotations__", {}).items()}
    assert {"projects", "memories", "entries", "knowledge_index", "documents", "conversions"} <= providers.keys()
    # (search alone has a pool of its own)
    assert {name for name, provider in providers.items() if provider.pool != "database"} == {"knowledge_index"}
    for name, provider in providers.items():
        # When each is asked for
        adapter = getattr(container, name)
        # Then it is the named adapter, built once, on the pool it names
        assert type(adapter) is provider.adapter_class() and getattr(container, name) is adapter
        pool = getattr(container, provider.pool)
        assert pool in vars(adapter).values(), f"{name} is not built on {provider.pool}"
        # and it has every method of the port its annotation declares, with the port's parameters
        port = _port(re.fullmatch(r"cached_property\[(\w+)\]", annotations[name]).group(1))  # type: ignore[union-attr]
        for method, signature in inspect.getmembers(port, inspect.isfunction):
            if not method.startswith("_"):
                assert hasattr(adapter, method), f"{type(adapter).__name__} lacks {port.__name__}.{method}"
                assert inspect.signature(getattr(type(adapter), method)).parameters.keys() == \
                    inspect.signature(signature).parameters.keys(), f"{name}.{method}"
    container.close()
