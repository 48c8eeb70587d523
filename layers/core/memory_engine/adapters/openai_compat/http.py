"""JSON over HTTP to an OpenAI-compatible endpoint, on an httpx client the caller may share.

One ``httpx.Client`` per adapter (or one injected: tests, connection limits, proxies) keeps
connections alive between calls. ``timeout`` is a deadline on the whole answer, not on each socket
read: a peer that sends a byte at a time still ends within it.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

import httpx

#: An embeddings answer for 64 texts of 3,072 dimensions is ~4 MB of JSON; anything far beyond is not one.
MAX_ANSWER_BYTES: Final = 64 * 1024 * 1024


class HttpStatusError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


class JsonEndpoint:
    """POST JSON to one URL, read the JSON answer within a total deadline."""

    def __init__(self, url: str, *, api_key: str | None, client: httpx.Client | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self._headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
        self._client = client or httpx.Client()

    def post(self, payload: dict[str, Any], *, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        body = bytearray()
        with self._client.stream("POST", self.url, content=json.dumps(payload).encode(), headers=self._headers,
                                 timeout=timeout) as response:
            for chunk in response.iter_bytes():
                body += chunk
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no complete answer within {timeout:g} s")
                if len(body) > MAX_ANSWER_BYTES:
                    raise ValueError(f"the answer exceeds {MAX_ANSWER_BYTES // 2**20} MB")
        if response.status_code >= 400:
            raise HttpStatusError(response.status_code, body.decode("utf-8", "replace"))
        return json.loads(body)

    def close(self) -> None:
        self._client.close()


def is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, HttpStatusError) and (exc.status == 429 or exc.status >= 500)
