"""One real local engine (embedded PostgreSQL, the offline model, the HTTP gateway) for every
framework adapter test of a session (per xdist worker), and the typed clients on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory_engine.bootstrap import set_container
from memory_engine_client import AsyncMemoryEngineClient, MemoryEngineClient
from tests.conftest import _create_database
from tests.support.engine import RunningEngine, running_engine


@pytest.fixture(scope="session")
def engine(pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEngine]:
    with running_engine(_create_database(pg_server), tmp_path_factory.mktemp("integrations")) as running:  # type: ignore[arg-type]
        yield running


@pytest.fixture(autouse=True)
def _engine_container(engine: RunningEngine) -> None:
    """Other test modules of this worker install containers of their own: put the engine's back."""
    set_container(engine.engine.container)


@pytest.fixture(scope="session")
def api_key(engine: RunningEngine) -> str:
    return engine.key("integrations", "read,write")


#: The clients' request timeout here: these tests check what the integrations do, not how fast the engine
#: answers, and a turn of 200 KB (its every window embedded) can take longer than the 30 s default on a
#: busy two-core machine.
TIMEOUT = 180.0


@pytest.fixture
def client(engine: RunningEngine, api_key: str) -> Iterator[MemoryEngineClient]:
    with MemoryEngineClient(engine.base_url, api_key, timeout=TIMEOUT) as me:
        yield me


@pytest.fixture
def async_client(engine: RunningEngine, api_key: str) -> AsyncMemoryEngineClient:
    """Not entered: each test's event loop opens and closes it (``async with``)."""
    return AsyncMemoryEngineClient(engine.base_url, api_key, timeout=TIMEOUT)
