"""GET /console/: the web console, static files served by the API function itself.

Serving them from the API (rather than a bucket behind a CDN) keeps one origin for the page and the
API it calls, so the console works the same under `memory-engine dev` and on a deployed stack, needs
no CORS on the API and no second deployment. The files ship inside the package
(``memory_engine/console/``, package data and the core Lambda layer).

The pages need no key: the key is typed into the page and only ever sent by the page's own
``fetch`` calls in the ``Authorization`` header. Every answer carries a strict Content-Security-Policy
(scripts and styles from this origin only, no inline code, API calls to this origin and, on AWS, to
the documents bucket for presigned uploads), and an ETag so browsers revalidate cheaply.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from memory_engine.bootstrap import get_container
from memory_engine.errors import NotFound
from memory_engine.http.responses import error_response

router = Router()

#: The URL prefix of the console (``constants.CONSOLE_ROUTES`` pins it in infra/).
PREFIX = "/console"
INDEX = "index.html"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}


@functools.cache
def console_files() -> dict[str, bytes]:
    """name -> bytes of every servable file (read once per process; the set is the allowlist)."""
    folder = resources.files("memory_engine") / "console"
    return {
        item.name: item.read_bytes()
        for item in folder.iterdir()
        if item.is_file() and any(item.name.endswith(ext) for ext in CONTENT_TYPES)
    }


def content_security_policy() -> str:
    """Only this origin, plus the documents bucket on AWS (the browser PUTs presigned uploads there)."""
    connect = ["'self'"]
    settings = get_container().settings
    if settings.documents_bucket:
        bucket = settings.documents_bucket
        connect.append(f"https://{bucket}.s3.amazonaws.com")
        if settings.aws_region:
            connect.append(f"https://{bucket}.s3.{settings.aws_region}.amazonaws.com")
    return "; ".join([
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
        f"connect-src {' '.join(connect)}", "form-action 'none'", "base-uri 'none'", "frame-ancestors 'none'",
    ])


def _security_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": content_security_policy(),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
    }


def _serve(name: str) -> Response[Any]:
    body = console_files().get(name)
    if body is None:
        return error_response(NotFound(f"no console file {name!r}"))
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    # no-cache = revalidate every time: the files have no content hash in their names (no build step)
    headers = {**_security_headers(), "Cache-Control": "no-cache", "ETag": etag}
    if_none_match = router.current_event.headers.get("if-none-match", "")
    if etag in [tag.strip() for tag in if_none_match.split(",")]:
        return Response(status_code=304, body="", headers=headers)
    content_type = CONTENT_TYPES[name[name.rfind("."):]]
    return Response(status_code=200, content_type=content_type, body=body.decode("utf-8"), headers=headers)


@router.get(PREFIX, include_in_schema=False)
def console_root() -> Response[Any]:
    # relative asset URLs in index.html need the trailing slash
    return Response(status_code=308, body="", headers={"Location": f"{PREFIX}/", **_security_headers()})


@router.get(f"{PREFIX}/", include_in_schema=False)
def console_index() -> Response[Any]:
    return _serve(INDEX)


@router.get(f"{PREFIX}/<name>", include_in_schema=False)
def console_asset(name: str) -> Response[Any]:
    return _serve(name)
