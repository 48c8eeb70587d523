"""The asynchronous client: the same operations as :class:`MemoryEngineClient`, awaited."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterable, Mapping
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


class AsyncMemoryEngineClient:
    """``AsyncMemoryEngineClient(base_url, api_key)``; both default to ``$MEMORY_ENGINE_URL`` (else
    ``http://127.0.0.1:8787``) and ``$MEMORY_ENGINE_API_KEY``. ``timeout`` is per request (seconds);
    idempotent calls are retried on 429/5xx and connection errors (``max_retries``, exponential
    backoff). Errors raise :class:`memory_engine_client.errors.APIError` subclasses carrying the SPEC
    error code. Use as an async context manager, or await :meth:`close`."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 30.0,
                 max_retries: int = 2, backoff: float = 0.5, http_client: httpx.AsyncClient | None = None) -> None:
        self.base_url, api_key = resolve_settings(base_url, api_key)
        self.retry = RetryPolicy(max_retries=max_retries, backoff=backoff)
        self._http = http_client or httpx.AsyncClient(base_url=self.base_url, timeout=timeout)
        self._http.headers.update(headers(api_key))
        self._api_key = api_key

    async def __aenter__(self) -> AsyncMemoryEngineClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def _request(self, call: Call, *, stream: bool = False) -> httpx.Response:
        """The final response of ``call`` after the retries its operation allows (an error status is
        returned too, read, for :func:`parse`); a ``stream`` success is returned unread and open."""
        attempt = 0
        while True:
            try:
                request = self._http.build_request(call.operation.method, call.path, params=call.params,
                                                   json=call.json, content=call.content, headers=call.headers)
                response: httpx.Response | None = await self._http.send(request, stream=stream)
            except httpx.TimeoutException as error:
                failure: Exception = APITimeoutError(f"{call.operation.method} {call.path} timed out: {error}")
                response = None
            except httpx.TransportError as error:
                failure = APIConnectionError(f"cannot reach {self.base_url}: {error}")
                response = None
            if response is not None and stream and response.status_code >= 400:
                try:
                    await response.aread()
                finally:
                    await response.aclose()
            if self.retry.should_retry(call.operation, attempt, response):
                if response is not None:
                    await response.aclose()
                await asyncio.sleep(self.retry.delay(attempt, response))
                attempt += 1
                continue
            if response is None:
                raise failure
            return response

    async def _send(self, call: Call) -> Any:
        return parse(call, await self._request(call))

    async def _stream_lines(self, call: Call) -> AsyncIterator[str]:
        """The lines of a streamed success (errors raise their typed APIError; a connection lost
        mid-body raises APIConnectionError / APITimeoutError and is not retried)."""
        response = await self._request(call, stream=True)
        parse(call, response)  # raises on an error status
        try:
            async for line in response.aiter_lines():
                yield line
        except httpx.TimeoutException as error:
            raise APITimeoutError(f"{call.operation.method} {call.path} timed out: {error}") from error
        except httpx.TransportError as error:
            raise APIConnectionError(f"{call.operation.method} {call.path} broke off: {error}") from error
        finally:
            await response.aclose()

    # --- health ---
    async def health(self) -> m.Health:
        return await self._send(build("health"))  # type: ignore[no-any-return]

    # --- memories ---
    async def create_memory(self, name: str, **fields: Any) -> m.Memory:
        """Fields: description, tags, metadata, default_ttl (seconds: entries written without their own
        ``expires_at`` expire this long after they are written)."""
        return await self._send(build("create_memory", body={"name": name, **fields}))  # type: ignore[no-any-return]

    async def list_memories(self, *, tags: list[str] | None = None, limit: int | None = None,
                      cursor: str | None = None) -> m.MemoryPage:
        return await self._send(build("list_memories", params={"tags": tags, "limit": limit, "cursor": cursor}))  # type: ignore[no-any-return]

    async def iter_memories(self, *, tags: list[str] | None = None, page_size: int = 100) -> AsyncIterator[m.Memory]:
        """Every memory (newest first), following ``next_cursor``."""
        cursor: str | None = None
        while True:
            page = await self.list_memories(tags=tags, limit=page_size, cursor=cursor)
            for item in page.data:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def get_memory(self, memory_id: str) -> m.Memory:
        return await self._send(build("get_memory", path_params={"memory_id": memory_id}))  # type: ignore[no-any-return]

    async def update_memory(self, memory_id: str, **fields: Any) -> m.Memory:
        """Fields sent replace the stored ones (name, description, tags, metadata, default_ttl)."""
        return await self._send(build("update_memory", path_params={"memory_id": memory_id}, body=fields))  # type: ignore[no-any-return]

    @overload
    async def delete_memory(self, memory_id: str, *, purge: Literal[False] = False) -> None: ...
    @overload
    async def delete_memory(self, memory_id: str, *, purge: Literal[True]) -> m.ForgetResult: ...
    @overload
    async def delete_memory(self, memory_id: str, *, purge: bool) -> m.ForgetResult | None: ...

    async def delete_memory(self, memory_id: str, *, purge: bool = False) -> m.ForgetResult | None:
        """Deletes the memory, its entries and episodes (None: the API answers 204). ``purge=True``
        also deletes its extraction runs and the entities no entry links any more, and answers the
        counts. A repeat is a NotFoundError."""
        call = build("delete_memory", path_params={"memory_id": memory_id}, params={"purge": flag(purge) if purge else None})
        return await self._send(call)  # type: ignore[no-any-return]

    # --- export and import ---
    async def export_memory(self, memory_id: str, *, vectors: bool = True) -> AsyncIterator[dict[str, Any]]:
        """The memory's JSONL export, one parsed line at a time as it arrives (``async for``); see
        :meth:`MemoryEngineClient.export_memory`."""
        call = build("export_memory", path_params={"memory_id": memory_id}, params={"vectors": flag(vectors)})
        async for line in self._stream_lines(call):
            parsed = jsonl_line(line)
            if parsed is not None:
                yield parsed

    async def export_memory_to_file(self, memory_id: str, path: str | os.PathLike[str], *, vectors: bool = True) -> int:
        """Streams the memory's JSONL export into ``path`` (via ``<path>.part``, renamed when complete);
        answers the number of lines."""
        target = Path(path)
        partial = target.with_name(target.name + ".part")
        call = build("export_memory", path_params={"memory_id": memory_id}, params={"vectors": flag(vectors)})
        count = 0
        try:
            with partial.open("w", encoding="utf-8", newline="\n") as out:
                async for line in self._stream_lines(call):
                    if line.strip():
                        out.write(line + "\n")
                        count += 1
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        return count

    async def import_memory(self, data: bytes | str | Iterable[Mapping[str, Any]]) -> m.ImportResult:
        """Imports an export as a new memory (JSONL ``bytes``/``str``, or parsed lines); never retried."""
        return await self._send(build("import_memory", content=jsonl_body(data)))  # type: ignore[no-any-return]

    async def import_memory_file(self, path: str | os.PathLike[str]) -> m.ImportResult:
        """Imports the JSONL export in ``path``."""
        data = await asyncio.to_thread(Path(path).read_bytes)
        return await self._send(build("import_memory", content=data))  # type: ignore[no-any-return]

    # --- forgetting ---
    async def forget(self, *, conversation_id: str | None = None, memory_id: str | None = None,
                     entity: str | None = None) -> m.ForgetResult:
        """See :meth:`MemoryEngineClient.forget`; retried like a read (a repeat deletes nothing more)."""
        body = {k: v for k, v in {"conversation_id": conversation_id, "memory_id": memory_id, "entity": entity}.items()
                if v is not None}
        return await self._send(build("forget", body=body))  # type: ignore[no-any-return]

    # --- conversation turns ---
    async def record_turns(self, memory_id: str, conversation_id: str, turns: Iterable[Mapping[str, Any] | BaseModel], *,
                           extract: bool | None = None) -> m.TurnsRecorded:
        """Records up to 100 turns (``{role, content, turn_id?, occurred_at?, metadata?}``) as the memory's
        episodes, in order. Turns without a ``turn_id`` get a fresh one here, so the call is retried safely;
        a ``turn_id`` already stored keeps the stored turn (``created: false``). ``extract=True`` queues the
        new user/assistant turns for fact extraction when the engine has a chat model."""
        body = turns_body(conversation_id, turns, extract)
        return await self._send(build("record_turns", path_params={"memory_id": memory_id}, body=body))  # type: ignore[no-any-return]

    async def list_turns(self, memory_id: str, conversation_id: str, *, order: Literal["asc", "desc"] | None = None,
                         limit: int | None = None, cursor: str | None = None) -> m.TurnPage:
        """A page of the conversation's turns, oldest first (``order="desc"``: newest first)."""
        params = {"conversation_id": conversation_id, "order": order, "limit": limit, "cursor": cursor}
        return await self._send(build("list_turns", path_params={"memory_id": memory_id}, params=params))  # type: ignore[no-any-return]

    async def iter_turns(self, memory_id: str, conversation_id: str, *, order: Literal["asc", "desc"] | None = None,
                         page_size: int = 100) -> AsyncIterator[m.Turn]:
        """Every turn of the conversation in order, following ``next_cursor``."""
        cursor: str | None = None
        while True:
            page = await self.list_turns(memory_id, conversation_id, order=order, limit=page_size, cursor=cursor)
            for turn in page.data:
                yield turn
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def delete_turn(self, memory_id: str, turn_id: str, *, conversation_id: str | None = None) -> None:
        """Deletes the turn (in ``conversation_id`` when given); NotFoundError when none matches."""
        await self._send(build("delete_turn", path_params={"memory_id": memory_id, "turn_id": turn_id},
                               params={"conversation_id": conversation_id}))

    async def delete_conversation_turns(self, memory_id: str, conversation_id: str) -> None:
        """Deletes every turn of the conversation (facts extracted from them stay: see :meth:`forget`)."""
        await self._send(build("delete_conversation_turns", path_params={"memory_id": memory_id},
                               params={"conversation_id": conversation_id}))

    # --- memory entries ---
    async def write_entry(self, memory_id: str, content: str, **fields: Any) -> m.EntryWriteResult:
        """The write funnel; ``result.action`` says what happened. ``source_type="agent"`` (with
        ``agent={"generation_id": ...}``) is the agent path: similar facts may merge or supersede."""
        body = {"memory_id": memory_id, "content": content, **fields}
        return await self._send(build("write_entry", body=body))  # type: ignore[no-any-return]

    async def list_entries(self, *, memory_id: str | None = None, include_invalidated: bool | None = None,
                     limit: int | None = None, cursor: str | None = None) -> m.MemoryEntryPage:
        params = {"memory_id": memory_id, "limit": limit, "cursor": cursor,
                  "include_invalidated": flag(include_invalidated)}
        return await self._send(build("list_entries", params=params))  # type: ignore[no-any-return]

    async def iter_entries(self, *, memory_id: str | None = None, include_invalidated: bool | None = None,
                     page_size: int = 100) -> AsyncIterator[m.MemoryEntry]:
        cursor: str | None = None
        while True:
            page = await self.list_entries(memory_id=memory_id, include_invalidated=include_invalidated, limit=page_size,
                                     cursor=cursor)
            for item in page.data:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def write_entries(self, entries: Iterable[Mapping[str, Any] | BaseModel], *,
                            duplicate_threshold: float | None = None) -> m.EntryBatchResult:
        """Up to 100 entries in one call; see :meth:`MemoryEngineClient.write_entries` (retried on
        429/5xx: a repeat skips what is stored)."""
        body: dict[str, Any] = {"entries": batch_items(entries)}
        if duplicate_threshold is not None:
            body["duplicate_threshold"] = duplicate_threshold
        return await self._send(build("write_entries", body=body))  # type: ignore[no-any-return]

    async def delete_entries(self, ids: Iterable[str]) -> m.EntryBatchDeleteResult:
        """Deletes up to 100 entries by id; each answers ``deleted`` or ``not_found``."""
        return await self._send(build("delete_entries", body={"ids": list(ids)}))  # type: ignore[no-any-return]

    async def get_entry(self, entry_id: str) -> m.MemoryEntry:
        return await self._send(build("get_entry", path_params={"entry_id": entry_id}))  # type: ignore[no-any-return]

    async def replace_entry(self, entry_id: str, **fields: Any) -> m.MemoryEntry:
        return await self._send(build("replace_entry", path_params={"entry_id": entry_id}, body=fields))  # type: ignore[no-any-return]

    async def delete_entry(self, entry_id: str) -> None:
        await self._send(build("delete_entry", path_params={"entry_id": entry_id}))

    # --- search ---
    async def search(self, query: str | None = None, **fields: Any) -> m.SearchResponseBody:
        """Fields: memory_ids, memory_tags, document_ids, document_paths, limit, render, include,
        preset (``hybrid``, ``vector_only``, ``keyword_only``, ``entity_only``, ``rrf_v1``), ..."""
        body = {"query": query, **fields} if query is not None else fields
        return await self._send(build("search", body=body))  # type: ignore[no-any-return]

    # --- extraction runs ---
    async def list_extraction_runs(self, *, memory_id: str | None = None,
                                   status: m.ExtractionRunStatus | None = None, event_id: str | None = None,
                                   limit: int | None = None, cursor: str | None = None) -> m.ExtractionRunPage:
        """What fact extraction did with each ``turn.completed`` event, newest first."""
        params = {"memory_id": memory_id, "status": status, "event_id": event_id, "limit": limit, "cursor": cursor}
        return await self._send(build("list_extraction_runs", params=params))  # type: ignore[no-any-return]

    async def iter_extraction_runs(self, *, memory_id: str | None = None,
                                   status: m.ExtractionRunStatus | None = None, event_id: str | None = None,
                                   page_size: int = 100) -> AsyncIterator[m.ExtractionRun]:
        cursor: str | None = None
        while True:
            page = await self.list_extraction_runs(memory_id=memory_id, status=status, event_id=event_id,
                                                   limit=page_size, cursor=cursor)
            for item in page.data:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # --- documents ---
    async def create_document(self, path: str, content: str, **fields: Any) -> m.Document:
        return await self._send(build("create_document", body={"path": path, "content": content, **fields}))  # type: ignore[no-any-return]

    async def create_documents(self, documents: list[dict[str, Any]]) -> m.DocumentBatchResult:
        return await self._send(build("create_documents", body={"documents": documents}))  # type: ignore[no-any-return]

    async def create_upload(self, path: str, **fields: Any) -> m.UploadUrl:
        return await self._send(build("create_upload", body={"path": path, **fields}))  # type: ignore[no-any-return]

    async def upload_document(self, path: str, data: bytes, **fields: Any) -> m.UploadUrl:
        """Asks for an upload URL and PUTs ``data`` to it (S3 on AWS, the engine locally): ingestion starts."""
        upload = await self.create_upload(path, **fields)
        same_host = upload.upload_url.startswith(self.base_url)
        request_headers = dict(upload.headers)
        if same_host and self._api_key:
            request_headers["Authorization"] = f"Bearer {self._api_key}"
        async with httpx.AsyncClient(timeout=self._http.timeout) as plain:
            response = await plain.put(upload.upload_url, content=data, headers=request_headers)
        if response.status_code >= 400:
            parse(build("create_upload"), response)
        return upload

    async def list_documents(self, *, path_prefix: str | None = None, tags: list[str] | None = None,
                       status: str | None = None, limit: int | None = None, cursor: str | None = None) -> m.DocumentPage:
        params = {"path_prefix": path_prefix, "tags": tags, "status": status, "limit": limit, "cursor": cursor}
        return await self._send(build("list_documents", params=params))  # type: ignore[no-any-return]

    async def iter_documents(self, *, path_prefix: str | None = None, tags: list[str] | None = None,
                       status: str | None = None, page_size: int = 100) -> AsyncIterator[m.Document]:
        cursor: str | None = None
        while True:
            page = await self.list_documents(path_prefix=path_prefix, tags=tags, status=status, limit=page_size, cursor=cursor)
            for item in page.data:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def get_document(self, document_id: str) -> m.Document:
        return await self._send(build("get_document", path_params={"document_id": document_id}))  # type: ignore[no-any-return]

    async def document_status(self, document_id: str) -> m.DocumentStatusView:
        return await self._send(build("document_status", path_params={"document_id": document_id}))  # type: ignore[no-any-return]

    async def delete_document(self, document_id: str) -> None:
        await self._send(build("delete_document", path_params={"document_id": document_id}))

    async def reingest_document(self, document_id: str, **fields: Any) -> m.Document:
        return await self._send(build("reingest_document", path_params={"document_id": document_id}, body=fields))  # type: ignore[no-any-return]

    # --- ingestion rules (admin scope to change them) ---
    async def create_ingestion_rule(self, content_type_glob: str, converter: Mapping[str, Any],
                                    **fields: Any) -> m.IngestionRule:
        """``converter``: ``{"type": "http", "url", "headers"?, "timeout_s"?}`` or ``{"type": "ocr"}``."""
        body = {"content_type_glob": content_type_glob, "converter": dict(converter), **fields}
        return await self._send(build("create_ingestion_rule", body=body))  # type: ignore[no-any-return]

    async def list_ingestion_rules(self) -> m.IngestionRulePage:
        return await self._send(build("list_ingestion_rules"))  # type: ignore[no-any-return]

    async def get_ingestion_rule(self, rule_id: str) -> m.IngestionRule:
        return await self._send(build("get_ingestion_rule", path_params={"rule_id": rule_id}))  # type: ignore[no-any-return]

    async def replace_ingestion_rule(self, rule_id: str, content_type_glob: str, converter: Mapping[str, Any],
                                     **fields: Any) -> m.IngestionRule:
        body = {"content_type_glob": content_type_glob, "converter": dict(converter), **fields}
        return await self._send(build("replace_ingestion_rule", path_params={"rule_id": rule_id}, body=body))  # type: ignore[no-any-return]

    async def delete_ingestion_rule(self, rule_id: str) -> None:
        await self._send(build("delete_ingestion_rule", path_params={"rule_id": rule_id}))

    # --- embeddings ---
    async def embed(self, input: str | list[str]) -> m.EmbeddingsResponse:
        body = {"input": input} if isinstance(input, str) else {"inputs": input}
        return await self._send(build("embed", body=body))  # type: ignore[no-any-return]
