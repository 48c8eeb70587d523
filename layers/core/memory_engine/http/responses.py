"""JSON responses in the SPEC's shapes."""

from __future__ import annotations

import base64
import re
from typing import Annotated, Any
from urllib.parse import quote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from memory_engine.domain.cursor import MAX_LIMIT
from memory_engine.domain.serialization import to_jsonable
from memory_engine.errors import MemoryEngineError, http_status

#: The page parameters of every list route: ``limit`` (1..100; the route's default is
#: ``DEFAULT_LIMIT``) and ``cursor`` (a previous page's ``next_cursor``).
PageLimit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
PageCursor = Annotated[str | None, Query()]


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response[Any]:
    """A JSON response. Routes annotate ``-> Response[Any]`` (or a model) for Powertools' validation."""
    return Response(status_code=status, content_type="application/json", body=to_jsonable(body), headers=headers)


def error_response(error: MemoryEngineError) -> Response[Any]:
    return json_response(error.to_body(), http_status(error))


def no_content() -> Response[Any]:
    """204: no body, so no Content-Type either (a JSON content type on an empty body is a lie)."""
    return Response(status_code=204, body="")


_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


def file_response(data: bytes, *, content_type: str, filename: str) -> Response[Any]:
    """A file's exact bytes with its content type, as an attachment a browser never sniffs or renders.

    The body goes out base64-encoded (``isBase64Encoded``), as API Gateway expects a binary body:
    handing Powertools ``bytes`` would send them through its response validation, which decodes
    them as UTF-8 (a PNG answered 400). The filename is given twice: an ASCII-only ``filename``
    (every other character ``_``, so no quote, semicolon or line break reaches the header) and the
    exact name as RFC 5987 ``filename*``."""
    ascii_name = _UNSAFE_FILENAME.sub("_", filename).strip("._") or "download"
    disposition = f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"
    response: Response[Any] = Response(
        status_code=200, content_type=content_type, body=base64.b64encode(data).decode("ascii"), compress=False,
        headers={"X-Content-Type-Options": "nosniff", "Content-Disposition": disposition},
    )
    response.base64_encoded = True
    return response
