"""The synchronous client: one method per API operation, typed models in and out."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, overload

import httpx
from pydantic import BaseModel

from memory_engine_client import models as m
from memory_engine_client._core import (
    Call,
    RetryPolicy,
    batch_items,
    build,
    flag,
    headers,
    jsonl_body,
    jsonl_line,
    parse,
    resolve_settings,
    turns_body,
)
from memory_engine_client.errors import APIConnectionError, APITimeoutError


class MemoryEngineClient:
    """``MemoryEngineClient(base_url, api_key)``; both default to ``$MEMORY_ENGINE_URL`` (else
    ``http://127.0.0.1:8787``) and ``$MEMORY_ENGINE_API_KEY``. ``timeout`` is per request (seconds);
    idempotent calls are retried on 429/5xx and connection errors (``max_retries``, exponential
    backoff). Errors raise :class:`memory_engine_client.errors.APIError` subclasses carrying the SPEC
    error code. Use as a context manager, or call :meth:`close`."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 30.0,
                 max_retries: int = 2, backoff: float = 0.5, http_client: httpx.Client | None = None) -> None:
        self.base_url, api_key = resolve_settings(base_url, api_key)
        self.retry = RetryPolicy(max_retries=max_retries, backoff=backoff)
        self._http = http_client or httpx.Client(base_url=self.base_url, timeout=timeout)
        self._http.headers.update(headers(api_key))
        self._api_key = api_key

    def __enter__(self) -> MemoryEngineClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _request(self, call: Call, *, stream: bool = False) -> httpx.Response:
        """The final response of ``call`` after the retries its operation allows (an error status is
        returned too, read, for :func:`parse`); a ``stream`` success is returned unread and open."""
        attempt = 0
        while True:
            try:
                request = self._http.build_request(call.operation.method, call.path, params=call.params,
                                                   json=call.json, content=call.content, headers=call.headers)
                response: httpx.Response | None = self._http.send(request, stream=stream)
            except httpx.TimeoutException as error:
                failure: Exception = APITimeoutError(f"{call.operation.method} {call.path} timed out: {error}")
                response = None
            except httpx.TransportError as error:
                failure = APIConnectionError(f"cannot reach {self.base_url}: {error}")
                response = None
            if response is not None and stream and response.status_code >= 400:
                try:
                    response.read()
                finally:
                    response.close()
            if self.retry.should_retry(call.operation, attempt, response):
                if response is not None:
                    response.close()
                time.sleep(self.retry.delay(attempt, response))
                attempt += 1
                continue
            if response is None:
                raise failure
            return response

    def _send(self, call: Call) -> Any:
        return parse(call, self._request(call))

    def _stream_lines(self, call: Call) -> Iterator[str]:
        """The lines of a streamed success (errors raise their typed APIError; a connection lost
        mid-body raises APIConnectionError / APITimeoutError and is not retried)."""
        response = self._request(call, stream=True)
        parse(call, response)  # raises on an error status
        try:
            yield from response.iter_lines()
        except httpx.TimeoutException as error:
            raise APITimeoutError(f"{call.operation.method} {call.path} timed out: {error}") from error
        except httpx.TransportError as error:
            raise APIConnectionError(f"{call.operation.method} {call.path} broke off: {error}") from error
        finally:
            response.close()

    # --- health ---
    def health(self) -> m.Health:
        return self._send(build("health"))  # type: ignore[no-any-return]

    # --- memories ---
    def create_memory(self, name: str, **fields: Any) -> m.Memory:
        """Fields: description, tags, metadata, default_ttl (seconds: entries written without their own
        ``expires_at`` expire this long after they are written)."""
        return self._send(build("create_memory", body={"name": name, **fields}))  # type: ignore[no-any-return]

    def list_memories(self, *, tags: list[str] | None = None, limit: int | None = None,
                      cursor: str | None = None) -> m.MemoryPage:
        return self._send(build("list_memories", params={"tags": tags, "limit": limit, "cursor": cursor}))  # type: ignore[no-any-return]

    def iter_memories(self, *, tags: list[str] | None = None, page_size: int = 100) -> Iterator[m.Memory]:
        """Every memory (newest first), following ``next_cursor``."""
        cursor: str | None = None
        while True:
            page = self.list_memories(tags=tags, limit=page_size, cursor=cursor)
            yield from page.data
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get_memory(self, memory_id: str) -> m.Memory:
        return self._send(build("get_memory", path_params={"memory_id": memory_id}))  # type: ignore[no-any-return]

    def update_memory(self, memory_id: str, **fields: Any) -> m.Memory:
        """Fields sent replace the stored ones (name, description, tags, metadata, default_ttl)."""
        return self._send(build("update_memory", path_params={"memory_id": memory_id}, body=fields))  # type: ignore[no-any-return]

    @overload
    def delete_memory(self, memory_id: str, *, purge: Literal[False] = False) -> None: ...
    @overload
    def delete_memory(self, memory_id: str, *, purge: Literal[True]) -> m.ForgetResult: ...
    @overload
    def delete_memory(self, memory_id: str, *, purge: bool) -> m.ForgetResult | None: ...

    def delete_memory(self, memory_id: str, *, purge: bool = False) -> m.ForgetResult | None:
        """Deletes the memory, its entries and episodes (None: the API answers 204). ``purge=True``
        also deletes its extraction runs and the entities no entry links any more, and answers the
        counts. A repeat is a NotFoundError."""
        call = build("delete_memory", path_params={"memory_id": memory_id}, params={"purge": flag(purge) if purge else None})
        return self._send(call)  # type: ignore[no-any-return]

    # --- export and import ---
    def export_memory(self, memory_id: str, *, vectors: bool = True) -> Iterator[dict[str, Any]]:
        """The memory's JSONL export, one parsed line at a time as it arrives: a ``header``, the
        ``memory``, then ``entity``, ``entry`` and ``episode`` lines (each has ``type``). The request
        is sent when iteration starts (a missing memory raises NotFoundError then). ``vectors=False``
        leaves the vectors out (an import then embeds again). The HTTP export is at most 5 MB
        (PayloadTooLargeError beyond: use ``memory-engine export``)."""
        call = build("export_memory", path_params={"memory_id": memory_id}, params={"vectors": flag(vectors)})
        for line in self._stream_lines(call):
            parsed = jsonl_line(line)
            if parsed is not None:
                yield parsed

    def export_memory_to_file(self, memory_id: str, path: str | os.PathLike[str], *, vectors: bool = True) -> int:
        """Streams the memory's JSONL export into ``path`` (written to ``<path>.part`` and renamed when
        complete, so a failure never leaves a truncated export); answers the number of lines."""
        target = Path(path)
        partial = target.with_name(target.name + ".part")
        call = build("export_memory", path_params={"memory_id": memory_id}, params={"vectors": flag(vectors)})
        count = 0
        try:
            with partial.open("w", encoding="utf-8", newline="\n") as out:
                for line in self._stream_lines(call):
                    if line.strip():
                        out.write(line + "\n")
                        count += 1
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        return count

    def import_memory(self, data: bytes | str | Iterable[Mapping[str, Any]]) -> m.ImportResult:
        """Imports an export as a new memory of the key's project (new ids; the exported ones are kept
        in ``metadata.imported_from``): JSONL ``bytes``/``str``, or the parsed lines of
        :meth:`export_memory`. Never retried (each import creates a memory)."""
        return self._send(build("import_memory", content=jsonl_body(data)))  # type: ignore[no-any-return]

    def import_memory_file(self, path: str | os.PathLike[str]) -> m.ImportResult:
        """Imports the JSONL export in ``path`` (streamed from the file)."""
        with Path(path).open("rb") as source:
            return self._send(build("import_memory", content=source))  # type: ignore[no-any-return]

    # --- forgetting ---
    def forget(self, *, conversation_id: str | None = None, memory_id: str | None = None,
               entity: str | None = None) -> m.ForgetResult:
        """Hard-deletes what came from a conversation (``conversation_id``, in one memory with
        ``memory_id``, else the whole project), or what a memory knows about an ``entity``
        (``memory_id`` + ``entity``): entries, episodes, extraction runs, orphaned entities. A repeat
        deletes nothing more (zero counts), so it is retried like a read."""
        body = {k: v for k, v in {"conversation_id": conversation_id, "memory_id": memory_id, "entity": entity}.items()
                if v is not None}
        return self._send(build("forget", body=body))  # type: ignore[no-any-return]

    # --- conversation turns ---
    def record_turns(self, memory_id: str, conversation_id: str, turns: Iterable[Mapping[str, Any] | BaseModel], *,
                     extract: bool | None = None) -> m.TurnsRecorded:
        """Records up to 100 turns (``{role, content, turn_id?, occurred_at?, metadata?}``) as the memory's
        episodes, in order. Turns without a ``turn_id`` get a fresh one here, so the call is retried safely;
        a ``turn_id`` already stored keeps the stored turn (``created: false``). ``extract=True`` queues the
        new user/assistant turns for fact extraction when the engine has a chat model."""
        body = turns_body(conversation_id, turns, extract)
        return self._send(build("record_turns", path_params={"memory_id": memory_id}, body=body))  # type: ignore[no-any-return]

    def list_turns(self, memory_id: str, conversation_id: str, *, order: Literal["asc", "desc"] | None = None,
                   limit: int | None = None, cursor: str | None = None) -> m.TurnPage:
        """A page of the conversation's turns, oldest first (``order="desc"``: newest first)."""
        params = {"conversation_id": conversation_id, "order": order, "limit": limit, "cursor": cursor}
        return self._send(build("list_turns", path_params={"memory_id": memory_id}, params=params))  # type: ignore[no-any-return]

    def iter_turns(self, memory_id: str, conversation_id: str, *, order: Literal["asc", "desc"] | None = None,
                   page_size: int = 100) -> Iterator[m.Turn]:
        """Every turn of the conversation in order, following ``next_cursor``."""
        cursor: str | None = None
        while True:
            page = self.list_turns(memory_id, conversation_id, order=order, limit=page_size, cursor=cursor)
            yield from page.data
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def delete_turn(self, memory_id: str, turn_id: str, *, conversation_id: str | None = None) -> None:
        """Deletes the turn (in ``conversation_id`` when given); NotFoundError when none matches."""
        self._send(build("delete_turn", path_params={"memory_id": memory_id, "turn_id": turn_id},
                         params={"conversation_id": conversation_id}))

    def delete_conversation_turns(self, memory_id: str, conversation_id: str) -> None:
        """Deletes every turn of the conversation (facts extracted from them stay: see :meth:`forget`)."""
        self._send(build("delete_conversation_turns", path_params={"memory_id": memory_id},
                         params={"conversation_id": conversation_id}))

    # --- memory entries ---
    def write_entry(self, memory_id: str, content: str, **fields: Any) -> m.EntryWriteResult:
        """The write funnel; ``result.action`` says what happened. ``source_type="agent"`` (with
        ``agent={"generation_id": ...}``) is the agent path: similar facts may merge or supersede."""
        body = {"memory_id": memory_id, "content": content, **fields}
        return self._send(build("write_entry", body=body))  # type: ignore[no-any-return]

    def list_entries(self, *, memory_id: str | None = None, include_invalidated: bool | None = None,
                     limit: int | None = None, cursor: str | None = None) -> m.MemoryEntryPage:
        params = {"memory_id": memory_id, "limit": limit, "cursor": cursor,
                  "include_invalidated": flag(include_invalidated)}
        return self._send(build("list_entries", params=params))  # type: ignore[no-any-return]

    def iter_entries(self, *, memory_id: str | None = None, include_invalidated: bool | None = None,
                     page_size: int = 100) -> Iterator[m.MemoryEntry]:
        cursor: str | None = None
        while True:
            page = self.list_entries(memory_id=memory_id, include_invalidated=include_invalidated, limit=page_size,
                                     cursor=cursor)
            yield from page.data
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def write_entries(self, entries: Iterable[Mapping[str, Any] | BaseModel], *,
                      duplicate_threshold: float | None = None) -> m.EntryBatchResult:
        """Up to 100 entries in one call (each a ``write_entry`` body with its ``memory_id``, as a dict
        or an ``EntryCreateRequest``), through the write funnel in order and in one transaction. Each
        item answers ``created``, ``skipped`` or ``rejected`` (with ``error``; the others are still
        written). The manual path only (no merge or supersede), so a repeat skips what is stored:
        retried on 429/5xx like a read."""
        body: dict[str, Any] = {"entries": batch_items(entries)}
        if duplicate_threshold is not None:
            body["duplicate_threshold"] = duplicate_threshold
        return self._send(build("write_entries", body=body))  # type: ignore[no-any-return]

    def delete_entries(self, ids: Iterable[str]) -> m.EntryBatchDeleteResult:
        """Deletes up to 100 entries by id; each answers ``deleted`` or ``not_found``."""
        return self._send(build("delete_entries", body={"ids": list(ids)}))  # type: ignore[no-any-return]

    def get_entry(self, entry_id: str) -> m.MemoryEntry:
        return self._send(build("get_entry", path_params={"entry_id": entry_id}))  # type: ignore[no-any-return]

    def replace_entry(self, entry_id: str, **fields: Any) -> m.MemoryEntry:
        return self._send(build("replace_entry", path_params={"entry_id": entry_id}, body=fields))  # type: ignore[no-any-return]

    def delete_entry(self, entry_id: str) -> None:
        self._send(build("delete_entry", path_params={"entry_id": entry_id}))

    # --- search ---
    def search(self, query: str | None = None, **fields: Any) -> m.SearchResponseBody:
        """Fields: memory_ids, memory_tags, document_ids, document_paths, limit, render, include,
        preset (``hybrid``, ``vector_only``, ``keyword_only``, ``entity_only``, ``rrf_v1``), ..."""
        body = {"query": query, **fields} if query is not None else fields
        return self._send(build("search", body=body))  # type: ignore[no-any-return]

    # --- extraction runs ---
    def list_extraction_runs(self, *, memory_id: str | None = None, status: m.ExtractionRunStatus | None = None,
                             event_id: str | None = None, limit: int | None = None,
                             cursor: str | None = None) -> m.ExtractionRunPage:
        """What fact extraction did with each ``turn.completed`` event, newest first."""
        params = {"memory_id": memory_id, "status": status, "event_id": event_id, "limit": limit, "cursor": cursor}
        return self._send(build("list_extraction_runs", params=params))  # type: ignore[no-any-return]

    def iter_extraction_runs(self, *, memory_id: str | None = None, status: m.ExtractionRunStatus | None = None,
                             event_id: str | None = None, page_size: int = 100) -> Iterator[m.ExtractionRun]:
        cursor: str | None = None
        while True:
            page = self.list_extraction_runs(memory_id=memory_id, status=status, event_id=event_id, limit=page_size,
                                             cursor=cursor)
            yield from page.data
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # --- documents ---
    def create_document(self, path: str, content: str, **fields: Any) -> m.Document:
        return self._send(build("create_document", body={"path": path, "content": content, **fields}))  # type: ignore[no-any-return]

    def create_documents(self, documents: list[dict[str, Any]]) -> m.DocumentBatchResult:
        return self._send(build("create_documents", body={"documents": documents}))  # type: ignore[no-any-return]

    def create_upload(self, path: str, **fields: Any) -> m.UploadUrl:
        return self._send(build("create_upload", body={"path": path, **fields}))  # type: ignore[no-any-return]

    def upload_document(self, path: str, data: bytes, **fields: Any) -> m.UploadUrl:
        """Asks for an upload URL and PUTs ``data`` to it (S3 on AWS, the engine locally): ingestion starts."""
        upload = self.create_upload(path, **fields)
        same_host = upload.upload_url.startswith(self.base_url)
        request_headers = dict(upload.headers)
        if same_host and self._api_key:
            request_headers["Authorization"] = f"Bearer {self._api_key}"
        response = httpx.put(upload.upload_url, content=data, headers=request_headers, timeout=self._http.timeout)
        if response.status_code >= 400:
            parse(build("create_upload"), response)
        return upload

    def list_documents(self, *, path_prefix: str | None = None, tags: list[str] | None = None,
                       status: str | None = None, limit: int | None = None, cursor: str | None = None) -> m.DocumentPage:
        params = {"path_prefix": path_prefix, "tags": tags, "status": status, "limit": limit, "cursor": cursor}
        return self._send(build("list_documents", params=params))  # type: ignore[no-any-return]

    def iter_documents(self, *, path_prefix: str | None = None, tags: list[str] | None = None,
                       status: str | None = None, page_size: int = 100) -> Iterator[m.Document]:
        cursor: str | None = None
        while True:
            page = self.list_documents(path_prefix=path_prefix, tags=tags, status=status, limit=page_size, cursor=cursor)
            yield from page.data
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get_document(self, document_id: str) -> m.Document:
        return self._send(build("get_document", path_params={"document_id": document_id}))  # type: ignore[no-any-return]

    def document_status(self, document_id: str) -> m.DocumentStatusView:
        return self._send(build("document_status", path_params={"document_id": document_id}))  # type: ignore[no-any-return]

    def delete_document(self, document_id: str) -> None:
        self._send(build("delete_document", path_params={"document_id": document_id}))

    def reingest_document(self, document_id: str, **fields: Any) -> m.Document:
        return self._send(build("reingest_document", path_params={"document_id": document_id}, body=fields))  # type: ignore[no-any-return]

    # --- ingestion rules (admin scope to change them) ---
    def create_ingestion_rule(self, content_type_glob: str, converter: Mapping[str, Any], **fields: Any) -> m.IngestionRule:
        """``converter``: ``{"type": "http", "url", "headers"?, "timeout_s"?}`` or ``{"type": "ocr"}``."""
        body = {"content_type_glob": content_type_glob, "converter": dict(converter), **fields}
        return self._send(build("create_ingestion_rule", body=body))  # type: ignore[no-any-return]

    def list_ingestion_rules(self) -> m.IngestionRulePage:
        return self._send(build("list_ingestion_rules"))  # type: ignore[no-any-return]

    def get_ingestion_rule(self, rule_id: str) -> m.IngestionRule:
        return self._send(build("get_ingestion_rule", path_params={"rule_id": rule_id}))  # type: ignore[no-any-return]

    def replace_ingestion_rule(self, rule_id: str, content_type_glob: str, converter: Mapping[str, Any],
                               **fields: Any) -> m.IngestionRule:
        body = {"content_type_glob": content_type_glob, "converter": dict(converter), **fields}
        return self._send(build("replace_ingestion_rule", path_params={"rule_id": rule_id}, body=body))  # type: ignore[no-any-return]

    def delete_ingestion_rule(self, rule_id: str) -> None:
        self._send(build("delete_ingestion_rule", path_params={"rule_id": rule_id}))

    # --- embeddings ---
    def embed(self, input: str | list[str]) -> m.EmbeddingsResponse:
        body = {"input": input} if isinstance(input, str) else {"inputs": input}
        return self._send(build("embed", body=body))  # type: ignore[no-any-return]
