"""Minimal JSON-over-HTTP client for OpenAI-compatible endpoints (stdlib only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class HttpStatusError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


def post_json(url: str, payload: dict[str, Any], *, api_key: str | None, timeout: float) -> Any:
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {url!r}")
    request = urllib.request.Request(url, json.dumps(payload).encode(), headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - configured URL
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise HttpStatusError(exc.code, exc.read().decode("utf-8", "replace")) from exc


def is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, HttpStatusError) and (exc.status == 429 or exc.status >= 500)
