"""Calls the real Lambda handlers with real API Gateway HTTP API v2 events (no sockets)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from memory_engine.local.apigw_events import decode_response, http_api_event
from memory_engine.local.routing import dispatch


@dataclass
class ApiResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class ApiClient:
    def __init__(self, key: str | None = None) -> None:
        self.key = key

    def with_key(self, key: str | None) -> ApiClient:
        return ApiClient(key)

    def request(
        self, method: str, path: str, *, json_body: Any = None, params: dict[str, Any] | None = None,
        body: bytes | None = None, headers: dict[str, str] | None = None,
    ) -> ApiResponse:
        all_headers = {"content-type": "application/json", **(headers or {})}
        if self.key is not None:
            all_headers["authorization"] = f"Bearer {self.key}"
        if json_body is not None:
            body = json.dumps(json_body).encode()
        query = urlencode(params or {}, doseq=True)
        event = http_api_event(method, path, query=query, headers=all_headers, body=body)
        return ApiResponse(*decode_response(dispatch(event)))

    def get(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("GET", path, **kw)

    def post(self, path: str, json_body: Any = None, **kw: Any) -> ApiResponse:
        return self.request("POST", path, json_body=json_body, **kw)

    def put(self, path: str, json_body: Any = None, **kw: Any) -> ApiResponse:
        return self.request("PUT", path, json_body=json_body, **kw)

    def delete(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("DELETE", path, **kw)
