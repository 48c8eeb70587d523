"""CrewAI (``crewai``) on memory-engine: a ``StorageBackend`` for its unified ``Memory``.

``MemoryEngineStorage`` implements ``crewai.memory.storage.backend.StorageBackend`` over one engine
memory, and ``EngineEmbedder`` embeds with the engine's own model (``POST /v1/embeddings``), so the
vectors CrewAI searches with are the ones the engine stores:

    client = MemoryEngineClient()
    memory = Memory(storage=MemoryEngineStorage(client, memory_id=m.id), embedder=EngineEmbedder(client))

- a record is one entry: ``content`` the record's, its ``categories`` as ``cat:<name>`` tags, every
  other field (id, scope, importance, metadata, source, private, times) in ``metadata.crewai``; the
  engine embeds the content itself (the record's own vector is not sent);
- ``search`` is the engine's vector search with CrewAI's query vector, scored by cosine;
- scopes, categories, metadata filters, ``get_record``, ``list_records``, ``count``, ``delete`` and
  ``reset`` are worked out here over the memory's entries (the engine filters entries by memory
  only): meant for memories of up to a few thousand records. A record whose content is already stored
  in the memory is skipped by the engine's write funnel (the stored one stands).

CrewAI pins ``openai<3`` while the OpenAI Agents SDK needs ``openai>=3``: install this extra in an
environment of its own (``pip install 'memory-engine-client[crewai]'``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from crewai.memory.types import MemoryRecord, ScopeInfo

from memory_engine_client import models as m
from memory_engine_client.client import MemoryEngineClient

RECORD_KEY = "crewai"
CATEGORY_TAG = "cat:"
#: The engine returns at most this many results per search (filters apply to them).
MAX_RESULTS = 100


class EngineEmbedder:
    """A CrewAI embedder (texts -> vectors) on the engine's embedding model."""

    def __init__(self, client: MemoryEngineClient) -> None:
        self._client = client

    def __call__(self, input: list[str]) -> list[list[float]]:
        texts = list(input)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), 100):
            vectors += [e.embedding for e in self._client.embed(texts[start:start + 100]).data]
        return vectors


class MemoryEngineStorage:
    """CrewAI's ``StorageBackend`` kept in one engine memory (see the module's docstring)."""

    def __init__(self, client: MemoryEngineClient, *, memory_id: str) -> None:
        self._client = client
        self.memory_id = memory_id

    # --- writes ---
    def save(self, records: list[MemoryRecord]) -> None:
        for start in range(0, len(records), 100):
            batch = [{"memory_id": self.memory_id, **_fields(r)} for r in records[start:start + 100]]
            self._client.write_entries(batch, duplicate_threshold=1.0)

    def update(self, record: MemoryRecord) -> None:
        found = [e for e, r in self._records() if r.id == record.id]
        if not found:
            self.save([record])
            return
        self._client.replace_entry(found[0].id, **_fields(record))

    def delete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
               record_ids: list[str] | None = None, older_than: datetime | None = None,
               metadata_filter: dict[str, Any] | None = None) -> int:
        doomed = [e.id for e, r in self._records()
                  if _matches(r, scope_prefix, categories, metadata_filter)
                  and (record_ids is None or r.id in record_ids)
                  and (older_than is None or r.created_at < older_than)]
        for start in range(0, len(doomed), 100):
            self._client.delete_entries(doomed[start:start + 100])
        return len(doomed)

    def reset(self, scope_prefix: str | None = None) -> None:
        self.delete(scope_prefix=scope_prefix)

    # --- reads ---
    def search(self, query_embedding: list[float], scope_prefix: str | None = None,
               categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
               limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        filtered = bool(scope_prefix or categories or metadata_filter)
        found = self._client.search(query_embedding=query_embedding, memory_ids=[self.memory_id],
                                    limit=MAX_RESULTS if filtered else min(limit, MAX_RESULTS), min_score=0)
        out: list[tuple[MemoryRecord, float]] = []
        for result in found.results:
            if not isinstance(result, m.MemoryResult):
                continue
            record = _record(result.content, result.metadata, result.created_at)
            score = result.similarity_score if result.similarity_score is not None else result.score
            if record and score >= min_score and _matches(record, scope_prefix, categories, metadata_filter):
                out.append((record, score))
        return sorted(out, key=lambda pair: pair[1], reverse=True)[:limit]

    def get_record(self, record_id: str) -> MemoryRecord | None:
        return next((r for _, r in self._records() if r.id == record_id), None)

    def list_records(self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        records = sorted((r for _, r in self._records() if _matches(r, scope_prefix)),
                         key=lambda r: r.created_at, reverse=True)
        return records[offset:offset + limit]

    def count(self, scope_prefix: str | None = None) -> int:
        return sum(1 for _, r in self._records() if _matches(r, scope_prefix))

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, record in self._records():
            if _matches(record, scope_prefix):
                for category in record.categories:
                    counts[category] = counts.get(category, 0) + 1
        return counts

    def list_scopes(self, parent: str = "/") -> list[str]:
        base = parent.rstrip("/") + "/"
        children = set()
        for _, record in self._records():
            if record.scope.startswith(base) and record.scope != base.rstrip("/"):
                children.add(base + record.scope[len(base):].split("/")[0])
        return sorted(children)

    def get_scope_info(self, scope: str) -> ScopeInfo:
        records = [r for _, r in self._records() if _matches(r, scope)]
        times = [r.created_at for r in records]
        return ScopeInfo(path=scope, record_count=len(records),
                         categories=sorted({c for r in records for c in r.categories}),
                         oldest_record=min(times) if times else None, newest_record=max(times) if times else None,
                         child_scopes=self.list_scopes(scope))

    # --- async twins (the same calls in a worker thread) ---
    async def asave(self, records: list[MemoryRecord]) -> None:
        await asyncio.to_thread(self.save, records)

    async def asearch(self, query_embedding: list[float], **kwargs: Any) -> list[tuple[MemoryRecord, float]]:
        return await asyncio.to_thread(self.search, query_embedding, **kwargs)

    async def adelete(self, **kwargs: Any) -> int:
        return await asyncio.to_thread(self.delete, **kwargs)

    async def aupdate(self, record: MemoryRecord) -> None:
        await asyncio.to_thread(self.update, record)

    async def aget_record(self, record_id: str) -> MemoryRecord | None:
        return await asyncio.to_thread(self.get_record, record_id)

    async def alist_records(self, **kwargs: Any) -> list[MemoryRecord]:
        return await asyncio.to_thread(self.list_records, **kwargs)

    async def acount(self, scope_prefix: str | None = None) -> int:
        return await asyncio.to_thread(self.count, scope_prefix)

    async def areset(self, scope_prefix: str | None = None) -> None:
        await asyncio.to_thread(self.reset, scope_prefix)

    def _records(self) -> Iterator[tuple[m.MemoryEntry, MemoryRecord]]:
        for entry in self._client.iter_entries(memory_id=self.memory_id):
            record = _record(entry.content, entry.metadata, entry.created_at)
            if record is not None:
                yield entry, record


def _fields(record: MemoryRecord) -> dict[str, Any]:
    kept = record.model_dump(mode="json", exclude={"content", "embedding"})
    return {"content": record.content, "tags": [CATEGORY_TAG + c for c in record.categories][:50],
            "metadata": {RECORD_KEY: kept}}


def _record(content: str, metadata: dict[str, Any] | None, created_at: datetime) -> MemoryRecord | None:
    kept = (metadata or {}).get(RECORD_KEY)
    if not isinstance(kept, dict):
        return None
    return MemoryRecord.model_validate({"created_at": created_at, **kept, "content": content})


def _matches(record: MemoryRecord, scope_prefix: str | None = None, categories: list[str] | None = None,
             metadata_filter: dict[str, Any] | None = None) -> bool:
    if scope_prefix and scope_prefix != "/":
        prefix = scope_prefix.rstrip("/")
        if record.scope != prefix and not record.scope.startswith(prefix + "/"):
            return False
    if categories and not set(categories) & set(record.categories):
        return False
    return all(record.metadata.get(k) == v for k, v in (metadata_filter or {}).items())
