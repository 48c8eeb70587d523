"""LangGraph (``langgraph``) on memory-engine: a ``BaseStore``.

How LangGraph's model maps onto the engine (docs/integrations.md):

- a **namespace** is one memory, made on the first ``put``: named ``langgraph:a/b/c``, its metadata
  ``{"langgraph_namespace": ["a", "b", "c"]}``, tagged ``lgns:<hash of the namespace>`` and
  ``lgp:<hash of each prefix>`` (so a search over a namespace prefix is the engine's ``memory_tags``
  filter; depth at most 49, the engine's tag limit);
- an **item** is one entry of that memory: ``content`` = ``"<key>: <text>"`` where the text is the
  value's string fields (or the ``index`` fields given to ``put``), embedded and keyword-indexed; the
  value itself in ``metadata.langgraph.value`` (so at most ~16 KB of JSON, the engine's metadata
  limit); ``created_at`` / ``updated_at`` are the entry's; ``ttl`` (minutes) is ``expires_at``;
- ``search(prefix, query=...)`` is the engine's hybrid search over the namespace's memories and
  ``SearchItem.score`` its fused score; without a query the items are listed, newest first;
- ``filter`` (equality, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` on value fields, dotted
  for nested ones) is
  applied here: the engine filters entries by memory only. With a query it filters the engine's best
  100 matches; an unknown operator is refused (ValueError);
- ``put(..., index=False)`` stores the item unranked: listed and read, never returned by a query.

``get``/``put``/``delete`` find a key by listing its namespace's entries: meant for namespaces of up
to a few thousand items. The async methods run the same calls in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from memory_engine_client import models as m
from memory_engine_client.client import MemoryEngineClient
from memory_engine_client.errors import NotFoundError

#: The metadata key of a memory's namespace and of an entry's item.
NAMESPACE_KEY = "langgraph_namespace"
ITEM_KEY = "langgraph"
#: The tag of an entry stored with ``index=False``.
NOT_INDEXED = "lg:noindex"
#: An entry's content holds at most this many characters (the engine's limit).
MAX_CONTENT = 8_000
#: Search results the engine returns at most (with a filter, the pool it is applied to).
MAX_RESULTS = 100

_OPS = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def _hash(path: tuple[str, ...]) -> str:
    return hashlib.sha256(json.dumps(list(path)).encode()).hexdigest()[:40]


def namespace_tag(namespace: tuple[str, ...]) -> str:
    return f"lgns:{_hash(namespace)}"


def prefix_tag(prefix: tuple[str, ...]) -> str:
    return f"lgp:{_hash(prefix)}"


class MemoryEngineStore(BaseStore):
    """A LangGraph ``BaseStore`` over the engine, through a :class:`MemoryEngineClient`."""

    supports_ttl = True

    def __init__(self, client: MemoryEngineClient, *, index_fields: list[str] | None = None) -> None:
        """``index_fields``: the value's fields embedded by default (all its strings when None)."""
        self._client = client
        self._index_fields = index_fields
        self._memories: dict[tuple[str, ...], str] = {}

    # --- BaseStore ---
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # --- operations ---
    def _get(self, op: GetOp) -> Item | None:
        memory_id = self._memory(op.namespace, create=False)
        entry = self._entry(memory_id, op.key) if memory_id else None
        if entry is None:
            return None
        if op.refresh_ttl:
            entry = self._refresh(entry)
        return _item(entry, op.namespace)

    def _put(self, op: PutOp) -> None:
        memory_id = self._memory(op.namespace, create=op.value is not None)
        found = self._entries(memory_id, op.key) if memory_id else []
        if op.value is None:
            if found:
                self._client.delete_entries([e.id for e in found])
            return
        assert memory_id is not None
        fields = self._fields(op)
        if found:
            self._client.replace_entry(found[0].id, **fields)
            if found[1:]:
                self._client.delete_entries([e.id for e in found[1:]])
        else:
            self._client.write_entry(memory_id, duplicate_threshold=1.0, **fields)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        check_filter(op.filter)
        tag = prefix_tag(op.namespace_prefix) if op.namespace_prefix else "lgns:*"
        if op.query:
            pool = MAX_RESULTS if op.filter else min(op.offset + op.limit, MAX_RESULTS)
            try:
                found = self._client.search(op.query, memory_tags=[tag], limit=pool)
            except NotFoundError:
                return []
            hits = [(r, _item_data(r.metadata)) for r in found.results if isinstance(r, m.MemoryResult)]
            ranked = [_search_item(r, data, r.score) for r, data in hits
                      if data and NOT_INDEXED not in r.tags and matches(data["value"], op.filter)]
        else:
            listed = [_search_item(e, data, None) for e in self._entries_under(tag)
                      if (data := _item_data(e.metadata)) and matches(data["value"], op.filter)]
            ranked = sorted(listed, key=lambda i: i.updated_at, reverse=True)
        return ranked[op.offset:op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces: set[tuple[str, ...]] = set()
        for memory in self._client.iter_memories(tags=["lgns:*"]):
            namespace = tuple((memory.metadata or {}).get(NAMESPACE_KEY) or ())
            if not namespace or not all(_condition(c, namespace) for c in op.match_conditions or ()):
                continue
            if not self._client.list_entries(memory_id=memory.id, limit=1).data:
                continue  # every item deleted
            spaces.add(namespace[:op.max_depth] if op.max_depth is not None else namespace)
        return sorted(spaces)[op.offset:op.offset + op.limit]

    # --- helpers ---
    def _memory(self, namespace: tuple[str, ...], *, create: bool) -> str | None:
        if namespace in self._memories:
            return self._memories[namespace]
        page = self._client.list_memories(tags=[namespace_tag(namespace)], limit=100).data
        same = sorted((mem for mem in page if tuple((mem.metadata or {}).get(NAMESPACE_KEY) or ()) == namespace),
                      key=lambda mem: (mem.created_at, mem.id))
        if same:
            self._memories[namespace] = same[0].id
        elif create:
            tags = [namespace_tag(namespace)] + [prefix_tag(namespace[:i]) for i in range(1, len(namespace) + 1)]
            created = self._client.create_memory(f"langgraph:{'/'.join(namespace)}"[:200], tags=tags,
                                                 metadata={NAMESPACE_KEY: list(namespace)})
            self._memories[namespace] = created.id
        return self._memories.get(namespace)

    def _entries(self, memory_id: str, key: str) -> list[m.MemoryEntry]:
        """The live entries of ``key``, newest first (more than one only after concurrent puts)."""
        try:
            hits = [e for e in self._client.iter_entries(memory_id=memory_id)
                    if (_item_data(e.metadata) or {}).get("key") == key and not _expired(e)]
        except NotFoundError:
            self._memories = {ns: mid for ns, mid in self._memories.items() if mid != memory_id}
            return []
        return sorted(hits, key=lambda e: (e.updated_at, e.id), reverse=True)

    def _entry(self, memory_id: str, key: str) -> m.MemoryEntry | None:
        found = self._entries(memory_id, key)
        return found[0] if found else None

    def _entries_under(self, tag: str) -> Iterator[m.MemoryEntry]:
        for memory in self._client.iter_memories(tags=[tag]):
            for entry in self._client.iter_entries(memory_id=memory.id):
                if not _expired(entry):
                    yield entry

    def _fields(self, op: PutOp) -> dict[str, Any]:
        assert op.value is not None
        index = op.index
        paths = (index if isinstance(index, list) else self._index_fields) if index is not False else None
        text = _text(op.value, paths)
        content = f"{op.key}: {text}" if text else op.key
        data = {"namespace": list(op.namespace), "key": op.key, "value": op.value, "ttl": op.ttl}
        return {"content": content[:MAX_CONTENT], "metadata": {ITEM_KEY: data},
                "tags": [NOT_INDEXED] if index is False else [], "expires_at": _expiry(op.ttl)}

    def _refresh(self, entry: m.MemoryEntry) -> m.MemoryEntry:
        ttl = (_item_data(entry.metadata) or {}).get("ttl")
        if not ttl:
            return entry
        return self._client.replace_entry(entry.id, expires_at=_expiry(ttl))


def check_filter(conditions: dict[str, Any] | None) -> None:
    """Raises ValueError for an operator this store cannot apply."""
    for value in (conditions or {}).values():
        if isinstance(value, dict):
            unknown = [k for k in value if k.startswith("$") and k not in _OPS]
            if unknown:
                raise ValueError(f"filter operator(s) {unknown} are not supported: use one of {sorted(_OPS)}")


def matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """Whether ``value`` meets every condition (``{"field": v}`` or ``{"field": {"$op": v}}``)."""
    for field, wanted in (conditions or {}).items():
        actual = value.get(field) if field in value else _at(value, field)  # "a.b": a nested field
        if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
            try:
                if not all(_OPS[op](actual, operand) for op, operand in wanted.items()):
                    return False
            except TypeError:  # e.g. None > 3
                return False
        elif actual != wanted:
            return False
    return True


def _condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True))


def _item_data(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    data = (metadata or {}).get(ITEM_KEY)
    return data if isinstance(data, dict) and "key" in data else None


def _item(entry: m.MemoryEntry, namespace: tuple[str, ...]) -> Item:
    data = _item_data(entry.metadata) or {}
    return Item(value=data.get("value") or {}, key=str(data.get("key")), namespace=namespace,
                created_at=entry.created_at, updated_at=entry.updated_at)


def _search_item(row: m.MemoryEntry | m.MemoryResult, data: dict[str, Any], score: float | None) -> SearchItem:
    namespace = tuple(data.get("namespace") or ())
    updated = getattr(row, "updated_at", row.created_at)
    return SearchItem(namespace=namespace, key=str(data["key"]), value=data.get("value") or {},
                      created_at=row.created_at, updated_at=updated, score=score)


def _text(value: Mapping[str, Any], paths: list[str] | None) -> str:
    """The strings of ``value`` (of the fields in ``paths``, dotted, ``$`` = all), in order."""
    picked: list[Any] = [value] if not paths or "$" in paths else [_at(value, p) for p in paths]
    return " ".join(s for v in picked for s in _strings(v)).strip()


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _expiry(ttl: float | None) -> str | None:
    return (datetime.now(UTC) + timedelta(minutes=ttl)).isoformat() if ttl else None


def _expired(entry: m.MemoryEntry) -> bool:
    return entry.expires_at is not None and entry.expires_at <= datetime.now(UTC)
