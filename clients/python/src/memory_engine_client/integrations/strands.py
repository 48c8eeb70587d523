"""Strands Agents (``strands-agents``) on memory-engine: a ``MemoryStore`` for its ``MemoryManager``.

``MemoryEngineMemoryStore`` implements ``strands.memory.MemoryStore`` over one memory, so the
manager's own ``search_memory`` / ``add_memory`` tools and its context injection run on the engine:

- ``search`` is the engine's hybrid search; each ``MemoryEntry.metadata`` carries the engine's
  ``id``, ``score``, ``memory_id`` and ``created_at``;
- ``add`` writes one fact through the agent write path (near-duplicates merge, contradictions
  supersede); ``metadata`` goes to the entry's metadata;
- ``add_messages`` (the sink of the manager's server-side extraction, ``extraction=True``) records
  the messages as the memory's conversation turns with ``extract: true``, so the engine's own fact
  extraction mines them (on AWS through Bedrock); the turn ids come from the batch and its sequence
  numbers, so a retried batch is stored once.

    store = MemoryEngineMemoryStore(client, memory_id=memory.id)
    agent = Agent(model=model, memory_manager=MemoryManager(stores=[store], add_tool_config=True))
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from strands.memory import AddMessagesContext, MemoryEntry, MemoryStore, SearchOptions
from strands.types.content import Message

from memory_engine_client import models as m
from memory_engine_client.async_client import AsyncMemoryEngineClient
from memory_engine_client.integrations._common import turn_batches

DEFAULT_MAX_SEARCH_RESULTS = 5


class MemoryEngineMemoryStore(MemoryStore):
    """A writable Strands memory store kept in one engine memory."""

    def __init__(self, client: AsyncMemoryEngineClient, *, memory_id: str, name: str = "memory_engine",
                 description: str | None = "Long-term facts about the user and past conversations.",
                 max_search_results: int | None = DEFAULT_MAX_SEARCH_RESULTS, extraction: Any = None,
                 conversation_id: str = "strands", model: str | None = None) -> None:
        """``conversation_id``: the conversation ``add_messages`` records turns in; ``model`` names the
        agent's model in the write path's agent context."""
        self.name = name
        self.description = description
        self.max_search_results = max_search_results
        self.writable = True
        self.extraction = extraction
        self.memory_id = memory_id
        self.conversation_id = conversation_id
        self._client = client
        self._model = model

    async def search(self, query: str, options: SearchOptions | None = None) -> list[MemoryEntry]:
        limit = (options or {}).get("max_search_results") or self.max_search_results or DEFAULT_MAX_SEARCH_RESULTS
        found = await self._client.search(query, memory_ids=[self.memory_id], limit=limit)
        return [MemoryEntry(content=r.content, metadata=_metadata(r)) for r in found.results
                if isinstance(r, m.MemoryResult)]

    async def add(self, content: str, metadata: dict[str, Any] | None = None) -> m.EntryWriteResult:
        fields: dict[str, Any] = {"source_type": "agent"}
        if metadata:
            fields["metadata"] = metadata
        if self._model:
            fields["agent"] = {"model": self._model}
        return await self._client.write_entry(self.memory_id, content, **fields)

    async def add_messages(self, messages: list[Message], context: AddMessagesContext | None = None) -> list[str]:
        """Records the messages as turns (``extract: true``); the stored turns' ids."""
        numbers = (context.sequence_numbers if context else None) or list(range(len(messages)))
        key = hashlib.sha256(json.dumps([messages, numbers], default=str).encode()).hexdigest()[:24]
        turns = []
        for message, number in zip(messages, numbers, strict=True):
            role, text = _turn(message)
            if text:
                turns.append({"turn_id": f"strands-{key}-{number}", "role": role, "content": text})
        ids: list[str] = []
        for part in turn_batches(turns):
            recorded = await self._client.record_turns(self.memory_id, self.conversation_id, part, extract=True)
            ids += [t.id for t in recorded.turns]
        return ids


def _metadata(result: m.MemoryResult) -> dict[str, Any]:
    return {"id": result.id, "score": result.score, "memory_id": result.memory_id,
            "created_at": result.created_at.isoformat(), **({"metadata": result.metadata} if result.metadata else {})}


def _turn(message: Message) -> tuple[str, str]:
    """(turn role, text): a message's text blocks; tool uses and results as JSON, role ``tool``."""
    texts = [block["text"] for block in message.get("content", []) if "text" in block]
    if texts:
        return message.get("role", "user"), "\n".join(texts).strip()
    other = [block for block in message.get("content", []) if "toolUse" in block or "toolResult" in block]
    return "tool", json.dumps(other, default=str) if other else ""
