"""What the sync and async clients share: the operation table, request building, response parsing
and the retry policy. No I/O here."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from memory_engine_client import models as m
from memory_engine_client.errors import error_from_response

ENV_URL = "MEMORY_ENGINE_URL"
ENV_API_KEY = "MEMORY_ENGINE_API_KEY"
DEFAULT_URL = "http://127.0.0.1:8787"
#: Statuses worth another try of an idempotent call.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Operation:
    """One HTTP operation of the API: ``path`` is a template (``{memory_id}``); ``response`` is None
    when the success has no body (204). ``idempotent`` calls are retried on 429/5xx and connection errors."""

    method: str
    path: str
    request: type[BaseModel] | None
    response: type[BaseModel] | None
    idempotent: bool


#: Every public operation of the API, by client method name (local-only stand-ins and POST /v1/mcp,
#: which MCP clients speak, are not here). The engine's tests check this table against its OpenAPI document.
OPERATIONS: dict[str, Operation] = {
    "health": Operation("GET", "/v1/health", None, m.Health, True),
    "create_memory": Operation("POST", "/v1/memories", m.MemoryFields, m.Memory, False),
    "list_memories": Operation("GET", "/v1/memories", None, m.MemoryPage, True),
    "get_memory": Operation("GET", "/v1/memories/{memory_id}", None, m.Memory, True),
    "update_memory": Operation("PUT", "/v1/memories/{memory_id}", m.MemoryFields, m.Memory, True),
    "delete_memory": Operation("DELETE", "/v1/memories/{memory_id}", None, None, True),
    "write_entry": Operation("POST", "/v1/memory-entries", m.EntryCreateRequest, m.EntryWriteResult, False),
    "list_entries": Operation("GET", "/v1/memory-entries", None, m.MemoryEntryPage, True),
    "get_entry": Operation("GET", "/v1/memory-entries/{entry_id}", None, m.MemoryEntry, True),
    "replace_entry": Operation("PUT", "/v1/memory-entries/{entry_id}", m.EntryReplacement, m.MemoryEntry, True),
    "delete_entry": Operation("DELETE", "/v1/memory-entries/{entry_id}", None, None, True),
    # search reads only: safe to repeat
    "search": Operation("POST", "/v1/knowledge/search", m.SearchRequest, m.SearchResponseBody, True),
    # the same text at the same path is a no-op (200), so creating documents is safe to repeat
    "create_document": Operation("POST", "/v1/documents", m.CreateTextDocument, m.Document, True),
    "create_documents": Operation("POST", "/v1/documents/batch", m.TextDocumentBatch, m.DocumentBatchResult, True),
    "create_upload": Operation("POST", "/v1/documents/uploads", m.UploadRequest, m.UploadUrl, True),
    "list_documents": Operation("GET", "/v1/documents", None, m.DocumentPage, True),
    "get_document": Operation("GET", "/v1/documents/{document_id}", None, m.Document, True),
    "document_status": Operation("GET", "/v1/documents/{document_id}/status", None, m.DocumentStatusView, True),
    "delete_document": Operation("DELETE", "/v1/documents/{document_id}", None, None, True),
    "reingest_document": Operation("POST", "/v1/documents/{document_id}/ingest", m.ReingestRequest, m.Document, False),
    "embed": Operation("POST", "/v1/embeddings", m.EmbeddingsRequest, m.EmbeddingsResponse, True),
}


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` further attempts of an idempotent call, waiting ``backoff * 2**attempt`` seconds
    (jittered, at most ``max_backoff``; a ``Retry-After`` header wins when shorter than ``max_backoff``)."""

    max_retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 8.0

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        if response is not None:
            after = response.headers.get("retry-after")
            if after is not None:
                try:
                    return min(self.max_backoff, max(0.0, float(after)))
                except ValueError:
                    pass
        base = min(self.max_backoff, self.backoff * (2**attempt))
        return base * (0.5 + random.random() / 2)

    def should_retry(self, operation: Operation, attempt: int, response: httpx.Response | None) -> bool:
        if not operation.idempotent or attempt >= self.max_retries:
            return False
        return response is None or response.status_code in RETRY_STATUSES


@dataclass(frozen=True)
class Call:
    operation: Operation
    path: str
    params: dict[str, Any] | None
    json: Any


def build(name: str, *, path_params: dict[str, str] | None = None, params: dict[str, Any] | None = None,
          body: dict[str, Any] | None = None) -> Call:
    """The call of operation ``name``; ``body`` is validated by the operation's request model
    (pydantic ValidationError on an unknown or invalid field) and sent without unset fields."""
    operation = OPERATIONS[name]
    path = operation.path
    for key, value in (path_params or {}).items():
        path = path.replace("{" + key + "}", quote(str(value), safe=""))
    payload = None
    if operation.request is not None and body is not None:
        payload = operation.request.model_validate(body).model_dump(mode="json", exclude_unset=True)
    query = {k: v for k, v in (params or {}).items() if v is not None} or None
    return Call(operation, path, query, payload)


def parse(call: Call, response: httpx.Response) -> Any:
    """The response model of a success; raises the typed APIError of an error."""
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = None
        raise error_from_response(response.status_code, body)
    if call.operation.response is None or response.status_code == 204:
        return None
    return call.operation.response.model_validate(response.json())


def resolve_settings(base_url: str | None, api_key: str | None) -> tuple[str, str | None]:
    """Explicit values, else ``$MEMORY_ENGINE_URL`` / ``$MEMORY_ENGINE_API_KEY`` (read when the client is made)."""
    url = (base_url or os.environ.get(ENV_URL) or DEFAULT_URL).rstrip("/")
    return url, api_key or os.environ.get(ENV_API_KEY)


def headers(api_key: str | None) -> dict[str, str]:
    out = {"User-Agent": "memory-engine-client/0.1", "Accept": "application/json"}
    if api_key:
        out["Authorization"] = f"Bearer {api_key}"
    return out
