"""Each Lambda function checks the settings it needs when its container starts: a missing one fails
the first invocation with a ConfigurationError naming every missing variable, before the event is
parsed or any adapter (database pool, AWS client) is built. Locally nothing AWS-only is needed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memory_engine import constants as c
from memory_engine.bootstrap import Container, set_container
from memory_engine.errors import ConfigurationError
from memory_engine.local.lambda_runtime import LocalLambdaContext, load_handler
from memory_engine.settings import AWS_REQUIREMENTS, Settings

#: (function, handler module, attribute) of every function that reads the engine's settings.
HANDLERS = [
    (c.FUNCTION_API, "api/handler", "lambda_handler"),
    (c.FUNCTION_SEARCH, "search/handler", "lambda_handler"),
    (c.FUNCTION_INGESTION, "ingestion/handler", "register"),
    (c.FUNCTION_INGESTION, "ingestion/handler", "embed_batch"),
    (c.FUNCTION_EXTRACTION, "extraction/handler", "lambda_handler"),
    (c.FUNCTION_EXPIRY, "expiry/handler", "lambda_handler"),
]
#: Not a valid event for any of them: a handler that got past its check would fail differently.
EVENT: dict[str, Any] = {"unexpected": True}


@pytest.fixture
def install() -> Iterator[Any]:
    def _install(**env: str) -> Container:
        container = Container(Settings(**env))
        set_container(container)
        return container

    yield _install
    set_container(None)


def _invoke(module: str, attribute: str, function: str) -> Any:
    return load_handler(module, attribute)(EVENT, LocalLambdaContext(function_name=f"memory-engine-{function}"))


@pytest.mark.parametrize(("function", "module", "attribute"), HANDLERS)
def test_on_aws_a_function_without_its_settings_fails_at_once_naming_each(
    install: Any, function: str, module: str, attribute: str
) -> None:
    # Given the AWS runtime with none of the function's settings
    container = install(MEMORY_ENGINE_RUNTIME="aws", EMBEDDING_PROVIDER="openai")
    # When it is invoked
    with pytest.raises(ConfigurationError) as raised:
        _invoke(module, attribute, function)
    # Then the error names the database, the model endpoint and every AWS-only variable it needs
    message = raised.value.message
    for name in (c.ENV_DATABASE_URL, c.ENV_DATABASE_SECRET_ARN, c.ENV_OPENAI_BASE_URL, *AWS_REQUIREMENTS[function]):
        assert name in message, (name, message)
    # and nothing was built on the way
    assert "database" not in container.__dict__ and "embedder" not in container.__dict__


@pytest.mark.parametrize(("function", "module", "attribute"), HANDLERS)
def test_with_its_settings_the_check_passes_and_the_event_is_handled(
    install: Any, database_url: str, function: str, module: str, attribute: str
) -> None:
    # Given the AWS runtime with everything the function needs (the AWS-only names unreachable)
    container = install(MEMORY_ENGINE_RUNTIME="aws", DATABASE_URL=database_url,
                        **{name: "configured" for name in AWS_REQUIREMENTS[function]})
    # When it is invoked with an event it cannot use
    try:
        _invoke(module, attribute, function)
    except ConfigurationError:
        raise
    except Exception:
        pass
    # Then the check passed, once for the container
    assert function in container._checked


def test_the_local_runtime_needs_only_a_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(c.ENV_DATABASE_URL, raising=False)
    settings = Settings(DATABASE_URL="postgresql://localhost/db")  # type: ignore[call-arg]
    assert all(settings.missing_for(function) == [] for function in AWS_REQUIREMENTS)
    assert Settings().missing_for(c.FUNCTION_SEARCH) == [f"{c.ENV_DATABASE_URL} (or {c.ENV_DATABASE_SECRET_ARN})"]
