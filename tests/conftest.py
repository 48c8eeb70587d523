"""Shared fixtures: one embedded PostgreSQL per test session (per xdist worker), one database
per test module cloned from a migrated template, the real offline embedding model."""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memory_engine.adapters.postgres.migrations import migrate
from memory_engine.bootstrap import set_container
from memory_engine.domain.auth import Scope, parse_scopes
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder
from memory_engine.local.container import LocalContainer
from memory_engine.ports.chat import ChatModel, NoChatModel
from memory_engine.services.keys import create_api_key
from memory_engine.settings import Settings
from tests.support.api_client import ApiClient
from tests.support.postgres import ExternalPostgres

os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "MemoryEngineTests")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
warnings.filterwarnings("ignore", message="No application metrics to publish")

TEMPLATE_DB = f"me_template_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MEMORY_ENGINE_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data; the test skips with a reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        reason = f"evaluation data not found at {path} (set MEMORY_ENGINE_SHARED_DATA)"
        if os.environ.get("CI") == "true":
            # CI has the data: a missing path there is a broken checkout, not a reason to skip the
            # quality gate silently
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow modules first (the evaluation gates, minutes each; the rest in collection order). With
    ``make test``'s ``--dist loadfile --no-loadscope-reorder`` the two workers start on them, instead of
    one worker running them at the end while the other has finished."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def embedder() -> OnnxMiniLMEmbedder:
    model = OnnxMiniLMEmbedder(threads=1)
    model.embed_query("warm up")
    return model


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPostgres | ExternalPostgres]:
    """The embedded PostgreSQL 18, or the server ``MEMORY_ENGINE_TEST_POSTGRES_URL`` names
    (tests/support/older_postgres.py runs the database tests on PostgreSQL 16 that way)."""
    external = os.environ.get("MEMORY_ENGINE_TEST_POSTGRES_URL")
    server: EmbeddedPostgres | ExternalPostgres = (
        ExternalPostgres(external) if external else EmbeddedPostgres(tmp_path_factory.mktemp("pg") / "pgdata")
    )
    uri = server.start()
    with psycopg.connect(uri, autocommit=True) as conn:
        # xdist workers share an external server: one template each
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(TEMPLATE_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DB)))
    migrate(server.uri(TEMPLATE_DB), embedding_dim=384)
    yield server
    server.stop()


def _create_database(server: EmbeddedPostgres | ExternalPostgres) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(TEMPLATE_DB))
        )
    return server.uri(name)


@pytest.fixture(scope="module")
def database_url(pg_server: EmbeddedPostgres | ExternalPostgres) -> str:
    """A fresh, migrated database for this test module."""
    return _create_database(pg_server)


@pytest.fixture
def fresh_database_url(pg_server: EmbeddedPostgres | ExternalPostgres) -> str:
    """A fresh, migrated database for one test."""
    return _create_database(pg_server)


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    """Override in a module to script a fake model (subclass ChatModel)."""
    return NoChatModel()


@pytest.fixture(scope="module")
def container(
    database_url: str, embedder: OnnxMiniLMEmbedder, chat_model: ChatModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalContainer]:
    """The module's container: its database, the real model, and a MEMORY_ENGINE_HOME of its own
    (local blob folder, drop folder)."""
    home = tmp_path_factory.mktemp("home")
    settings = Settings(DATABASE_URL=database_url, MEMORY_ENGINE_HOME=str(home))  # type: ignore[call-arg]
    built = LocalContainer(settings, embedder=embedder, chat_model=chat_model)
    set_container(built)
    yield built
    set_container(None)
    built.close()


@pytest.fixture(autouse=True)
def _installed_container(request: pytest.FixtureRequest) -> Iterator[None]:
    """Re-install the module's container before each test (other modules may have replaced it)."""
    if "container" in request.fixturenames:
        set_container(request.getfixturevalue("container"))
    yield


KeyFactory = Callable[..., str]


@pytest.fixture(scope="module")
def make_key(container: LocalContainer) -> KeyFactory:
    """``make_key("acme", "read,write")`` -> a raw API key for that project."""

    def make(project: str = "acme", scopes: str = "read,write") -> str:
        return create_api_key(container.projects, project_name=project, scopes=parse_scopes(scopes)).raw_key

    return make


@pytest.fixture(scope="module")
def api(make_key: KeyFactory) -> ApiClient:
    """An API client with a read+write key of project ``acme``."""
    return ApiClient(make_key("acme", "read,write"))


@pytest.fixture(scope="module")
def admin_api(make_key: KeyFactory) -> ApiClient:
    return ApiClient(make_key("acme", Scope.ADMIN.value))
