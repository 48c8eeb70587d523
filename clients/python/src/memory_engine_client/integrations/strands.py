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

Without the manager, ``memory_tools(client, memory_id)`` gives two plain ``@tool`` functions,
``recall_memory`` (hybrid search, results as text) and ``record_memory`` (the agent write path), for
``Agent(tools=...)``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from strands import tool
from strands.memory import AddMessagesContext, MemoryEntry, MemoryStore, SearchOptions
from strands.types.content import Message
from strands.types.tools import AgentTool

from memory_engine_client import models as m
from memory_engine_client.async_client import AsyncMemoryEngineClient
from memory_engine_client.integrations._common import results_text, turn_batches

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


def memory_tools(client: AsyncMemoryEngineClient, memory_id: str, *, limit: int = DEFAULT_MAX_SEARCH_RESULTS,
                 model: str | None = None) -> list[AgentTool]:
    """``recall_memory`` and ``record_memory`` over ``memory_id`` as Strands ``@tool`` functions."""

    @tool
    async def recall_memory(query: str) -> str:
        """Search long-term memory for facts about the user and past conversations.

        Args:
            query: What to look for, in a few words or a question.
        """
        return results_text(await client.search(query, memory_ids=[memory_id], limit=limit))

    @tool
    async def record_memory(fact: str) -> str:
        """Record one durable fact worth remembering in later conversations (a preference, a plan, a name).

        Args:
            fact: One self-contained sentence, e.g. "Sam prefers window seats."
        """
        fields: dict[str, Any] = {"source_type": "agent", **({"agent": {"model": model}} if model else {})}
        written = await client.write_entry(memory_id, fact, **fields)
        return f"{written.action}: {written.content}"

    return [recall_memory, record_memory]


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
