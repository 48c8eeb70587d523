"""The MCP tools' backend for ``memory-engine mcp`` (stdio): a local or remote engine reached over its
HTTP API with an API key, so the key's project and scopes apply exactly as they do to REST calls."""

from __future__ import annotations

from typing import Any

import httpx

from memory_engine.errors import DependencyError, MemoryEngineError
from memory_engine.mcp_server.backend import EngineBackend, Json


class RemoteBackend(EngineBackend):
    """``base_url`` is the engine's root (``http://127.0.0.1:8000`` or the API Gateway stage URL).
    Pass ``client`` to inject a transport (tests); it is closed by :meth:`close` either way."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 60.0, client: httpx.Client | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = client or httpx.Client(
            base_url=self.base_url, timeout=timeout,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "memory-engine-mcp"},
        )

    def close(self) -> None:
        self._client.close()

    def _call(self, method: str, path: str, *, json: Json | None = None, params: dict[str, Any] | None = None) -> Any:
        try:
            response = self._client.request(method, path, json=json, params=params)
        except httpx.HTTPError as error:
            raise DependencyError(f"cannot reach the engine at {self.base_url}: {error}") from error
        if response.status_code == 204:
            return None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400:
            raise _error(response.status_code, body)
        return body

    def search(self, body: Json) -> Json:
        return self._call("POST", "/v1/knowledge/search", json=body)  # type: ignore[no-any-return]

    def write_entry(self, body: Json) -> Json:
        return self._call("POST", "/v1/memory-entries", json=body)  # type: ignore[no-any-return]

    def list_memories(self, *, tags: list[str] | None, limit: int, cursor: str | None) -> Json:
        params = _params(tags=tags, limit=limit, cursor=cursor)
        return self._call("GET", "/v1/memories", params=params)  # type: ignore[no-any-return]

    def create_memory(self, body: Json) -> Json:
        return self._call("POST", "/v1/memories", json=body)  # type: ignore[no-any-return]

    def list_entries(self, *, memory_id: str, include_invalidated: bool, limit: int, cursor: str | None) -> Json:
        params = _params(memory_id=memory_id, include_invalidated=str(include_invalidated).lower(), limit=limit,
                         cursor=cursor)
        return self._call("GET", "/v1/memory-entries", params=params)  # type: ignore[no-any-return]

    def delete_entry(self, entry_id: str) -> None:
        self._call("DELETE", f"/v1/memory-entries/{_segment(entry_id)}")

    def create_document(self, body: Json) -> Json:
        return self._call("POST", "/v1/documents", json=body)  # type: ignore[no-any-return]

    def document_status(self, document_id: str) -> Json:
        return self._call("GET", f"/v1/documents/{_segment(document_id)}/status")  # type: ignore[no-any-return]


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _segment(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def _error(status: int, body: Any) -> MemoryEngineError:
    """The engine's SPEC error as a MemoryEngineError with the same status, code and message."""
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        error = MemoryEngineError(str(detail.get("message", "")), details=detail.get("details"),
                                  code=str(detail.get("code", "error")))
    else:
        error = MemoryEngineError(f"the engine answered HTTP {status}", code="http_error")
    error.status = status
    return error
