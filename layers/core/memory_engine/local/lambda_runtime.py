"""Run the repository's Lambda handlers in-process: load ``functions/<name>/handler.py`` by
path and give it a Lambda-shaped context, exactly as the Lambda runtime would."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from memory_engine import constants as c
from memory_engine.bootstrap import get_container
from memory_engine.errors import ConfigurationError

Handler = Callable[[dict[str, Any], Any], Any]
_lock = threading.Lock()


@dataclass
class LocalLambdaContext:
    """The attributes Powertools reads from a Lambda context object."""

    function_name: str
    memory_limit_in_mb: int = 1024
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "local"
    log_stream_name: str = "local"
    _deadline: float = field(default_factory=lambda: time.monotonic() + 900)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


#: The Lambda handlers the local runtime runs, by the module path under ``functions/`` each stack
#: function's code asset has (infra/: one folder per function, ``handler.py`` in it). The local runtime
#: loads only these; ``tests/unit/local/test_lambda_runtime.py`` checks the list is the folder's.
HANDLER_MODULES = frozenset({
    f"{c.FUNCTION_API}/handler", f"{c.FUNCTION_SEARCH}/handler", f"{c.FUNCTION_INGESTION}/handler",
    f"{c.FUNCTION_EXTRACTION}/handler", f"{c.FUNCTION_EXPIRY}/handler", "migrations/handler",
})


def functions_dir() -> Path:
    """``MEMORY_ENGINE_FUNCTIONS_DIR`` when set, else the ``functions/`` folder of the checkout this
    package runs from (the nearest enclosing folder with a ``pyproject.toml`` and a ``functions/``)."""
    configured = get_container().settings.functions_dir
    if configured is not None:
        return configured
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file() and (folder / "functions").is_dir():
            return folder / "functions"
    raise ConfigurationError(
        f"no functions/ folder next to this package ({Path(__file__).resolve().parent}): set "
        f"{c.ENV_FUNCTIONS_DIR} to the folder that holds the Lambda handlers")


def load_module(relative: str) -> ModuleType:
    """Load ``functions/<relative>.py`` (one of :data:`HANDLER_MODULES`, e.g. ``api/handler``) once per
    process."""
    if relative not in HANDLER_MODULES:
        raise ValueError(f"not a Lambda handler of this engine: {relative!r} (known: {sorted(HANDLER_MODULES)})")
    name = "memory_engine_functions." + relative.replace("/", ".")
    with _lock:
        if name in sys.modules:
            return sys.modules[name]
        path = functions_dir() / f"{relative}.py"
        if not path.exists():
            raise FileNotFoundError(f"Lambda handler not found: {path}")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module


def load_handler(relative: str, attribute: str = "lambda_handler") -> Handler:
    handler: Handler = getattr(load_module(relative), attribute)
    return handler


def invoke(relative: str, event: dict[str, Any], function_name: str | None = None) -> Any:
    """Call a handler the way the Lambda runtime does."""
    context = LocalLambdaContext(function_name=function_name or f"memory-engine-{relative.replace('/', '-')}")
    return load_handler(relative)(event, context)
