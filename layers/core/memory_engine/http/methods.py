"""Which methods a path answers: the ``Allow`` header of a 405.

Read from the committed OpenAPI document (every route of both Lambdas and the local-only ones), so
the answer is the same whichever function a request reaches, and it is what the document says.
The console's files (left out of the document) answer ``GET``.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

#: The methods an OpenAPI path item may hold, in the order an ``Allow`` header lists them.
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_CONSOLE = re.compile(r"/console(/[^/]*)?")


@functools.cache
def _path_table() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    document = json.loads(resources.files(__package__).joinpath("openapi.json").read_text("utf-8"))
    table = []
    for template, item in document["paths"].items():
        pattern = re.compile("".join("[^/]+" if part.startswith("{") else re.escape(part)
                                     for part in re.split(r"(\{[^}]+\})", template)))
        table.append((pattern, tuple(m for m in _METHODS if m.lower() in item)))
    table.append((_CONSOLE, ("GET",)))
    return tuple(table)


def allowed_methods(path: str) -> tuple[str, ...]:
    """The methods ``path`` answers (empty when no route has that path)."""
    found: set[str] = set()
    for pattern, methods in _path_table():
        if pattern.fullmatch(path):
            found.update(methods)
    return tuple(m for m in _METHODS if m in found)
