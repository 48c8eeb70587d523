"""What the sync and async clients share: the operation table, request building, response parsing
and the retry policy. No I/O here."""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Iterable, Mapping
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
#: The media type of a memory export (one JSON object a line), and of an import's body.
JSONL = "application/x-ndjson"


@dataclass(frozen=True)
class Operation:
    """One HTTP operation of the API: ``path`` is a template (``{memory_id}``); ``response`` is None
    when the success has no JSON body (204, or a JSONL export). ``idempotent`` calls are retried on
    429/5xx and connection errors. ``request_media`` / ``response_media`` name a body that is not JSON
    (the import's and the export's JSONL); None means JSON (or no body)."""

    method: str
    path: str
    request: type[BaseModel] | None
    response: type[BaseModel] | None
    idempotent: bool
    request_media: str | None = None
    response_media: str | None = None


#: Every public operation of the API, by client method name (local-only stand-ins and POST /v1/mcp,
#: which MCP clients speak, are not here). The engine's tests check this table against its OpenAPI document.
OPERATIONS: dict[str, Operation] = {
    "health": Operation("GET", "/v1/health", None, m.Health, True),
    "create_memory": Operation("POST", "/v1/memories", m.MemoryFields, m.Memory, False),
    "list_memories": Operation("GET", "/v1/memories", None, m.MemoryPage, True),
    "get_memory": Operation("GET", "/v1/memories/{memory_id}", None, m.Memory, True),
    "update_memory": Operation("PUT", "/v1/memories/{memory_id}", m.MemoryFields, m.Memory, True),
    # 204 without a body; ?purge=true answers 200 with the counts (ForgetResult)
    "delete_memory": Operation("DELETE", "/v1/memories/{memory_id}", None, m.ForgetResult, True),
    "export_memory": Operation("GET", "/v1/memories/{memory_id}/export", None, None, True, response_media=JSONL),
    # every import creates a new memory: never repeated
    "import_memory": Operation("POST", "/v1/memories/import", None, m.ImportResult, False, request_media=JSONL),
    # idempotent by turn_id: a turn sent again keeps the stored one (turns without a turn_id get a new
    # one each time, so the client sends its own ids: see record_turns)
    "record_turns": Operation("POST", "/v1/memories/{memory_id}/turns", m.TurnsRequest, m.TurnsRecorded, True),
    "list_turns": Operation("GET", "/v1/memories/{memory_id}/turns", None, m.TurnPage, True),
    "delete_turn": Operation("DELETE", "/v1/memories/{memory_id}/turns/{turn_id}", None, None, True),
    "delete_conversation_turns": Operation("DELETE", "/v1/memories/{memory_id}/turns", None, None, True),
    "write_entry": Operation("POST", "/v1/memory-entries", m.EntryCreateRequest, m.EntryWriteResult, False),
    "list_entries": Operation("GET", "/v1/memory-entries", None, m.MemoryEntryPage, True),
    "get_entry": Operation("GET", "/v1/memory-entries/{entry_id}", None, m.MemoryEntry, True),
    "replace_entry": Operation("PUT", "/v1/memory-entries/{entry_id}", m.EntryReplacement, m.MemoryEntry, True),
    "delete_entry": Operation("DELETE", "/v1/memory-entries/{entry_id}", None, None, True),
    # the batch is the manual write path (no merge or supersede) in one transaction: a failure rolls it
    # all back, and a repeat answers `skipped` for every item already stored, so it is safe to repeat
    "write_entries": Operation("POST", "/v1/memory-entries/batch", m.EntryBatch, m.EntryBatchResult, True),
    # an id already deleted answers `not_found`
    "delete_entries": Operation("DELETE", "/v1/memory-entries/batch", m.EntryIdBatch, m.EntryBatchDeleteResult, True),
    # a repeat deletes nothing more (zero counts)
    "forget": Operation("POST", "/v1/forget", m.ForgetRequest, m.ForgetResult, True),
    "list_extraction_runs": Operation("GET", "/v1/extraction-runs", None, m.ExtractionRunPage, True),
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
    "create_ingestion_rule": Operation("POST", "/v1/ingestion-rules", m.IngestionRuleFields, m.IngestionRule, False),
    "list_ingestion_rules": Operation("GET", "/v1/ingestion-rules", None, m.IngestionRulePage, True),
    "get_ingestion_rule": Operation("GET", "/v1/ingestion-rules/{rule_id}", None, m.IngestionRule, True),
    "replace_ingestion_rule": Operation("PUT", "/v1/ingestion-rules/{rule_id}", m.IngestionRuleFields,
                                        m.IngestionRule, True),
    "delete_ingestion_rule": Operation("DELETE", "/v1/ingestion-rules/{rule_id}", None, None, True),
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
        return float(base * (0.5 + random.random() / 2))

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
    #: a body that is not JSON (bytes, or a binary file the sync client streams), sent as ``request_media``
    content: Any = None
    headers: dict[str, str] | None = None


def flag(value: bool | None) -> str | None:
    """A boolean query parameter as the API reads it (``true``/``false``); None leaves it out."""
    return None if value is None else str(bool(value)).lower()


def build(name: str, *, path_params: dict[str, str] | None = None, params: dict[str, Any] | None = None,
          body: dict[str, Any] | None = None, content: Any = None) -> Call:
    """The call of operation ``name``; ``body`` is validated by the operation's request model
    (pydantic ValidationError on an unknown or invalid field) and sent without unset fields.
    ``content`` is the raw body of an operation with a ``request_media`` (the JSONL of an import)."""
    operation = OPERATIONS[name]
    path = operation.path
    for key, value in (path_params or {}).items():
        path = path.replace("{" + key + "}", quote(str(value), safe=""))
    payload = None
    if operation.request is not None and body is not None:
        payload = operation.request.model_validate(body).model_dump(mode="json", exclude_unset=True)
    query = {k: v for k, v in (params or {}).items() if v is not None} or None
    extra: dict[str, str] | None = None
    if operation.request_media is not None:
        extra = {"Content-Type": operation.request_media}
    if operation.response_media is not None:
        extra = {**(extra or {}), "Accept": f"{operation.response_media}, application/json"}
    return Call(operation, path, query, payload, content, extra)


def turns_body(conversation_id: str, turns: Iterable[Mapping[str, Any] | BaseModel], extract: bool | None) -> dict[str, Any]:
    """The body of ``record_turns``: every turn gets a ``turn_id`` (a fresh uuid when it has none),
    so a retried request stores each turn once."""
    items = []
    for turn in batch_items(turns):
        items.append({**turn, "turn_id": turn.get("turn_id") or uuid.uuid4().hex})
    body: dict[str, Any] = {"conversation_id": conversation_id, "turns": items}
    if extract is not None:
        body["extract"] = extract
    return body


def jsonl_body(data: bytes | str | Iterable[Mapping[str, Any]]) -> bytes:
    """The JSONL bytes of an import: ``bytes`` or ``str`` as they are, or one line per mapping (the
    parsed lines :meth:`MemoryEngineClient.export_memory` yields)."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    return b"".join(json.dumps(dict(line), separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
                    for line in data)


def jsonl_line(line: str) -> dict[str, Any] | None:
    """One parsed line of an export (None for a blank one)."""
    return json.loads(line) if line.strip() else None


def batch_items(entries: Iterable[Mapping[str, Any] | BaseModel]) -> list[dict[str, Any]]:
    """Batch items as plain objects (a model without its unset fields): the engine validates each."""
    return [e.model_dump(mode="json", exclude_unset=True) if isinstance(e, BaseModel) else dict(e) for e in entries]


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
