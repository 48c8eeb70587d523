"""LlamaIndex (``llama-index-core``) on memory-engine: a retriever and a memory block.

- ``MemoryEngineRetriever`` (a ``BaseRetriever``): the engine's fused search over memories and
  documents as ``NodeWithScore`` (the node id is the engine's entry or chunk id, the score its fused
  score; ``metadata`` names the source: ``source_type``, ``memory_id`` or ``document_id``, ``path``,
  ``page``, ``title``, ``chunk_index``, ``tags``). Scope it like a search request: ``memory_ids``,
  ``memory_tags``, ``document_ids``, ``document_paths`` (memories are searched only when scoped; a
  query always searches the project's documents, narrowed by the document filters).
- ``MemoryEngineMemoryBlock`` (a ``BaseMemoryBlock[str]`` for ``llama_index.core.memory.Memory``):
  messages flushed from short-term memory are recorded as the memory's conversation turns (and sent to
  fact extraction with ``extract=True``); on each ``get`` the latest messages are the query of a
  search whose facts and past turns become the block's text.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import Field

from memory_engine_client import models as m
from memory_engine_client.async_client import AsyncMemoryEngineClient
from memory_engine_client.client import MemoryEngineClient
from memory_engine_client.integrations._common import turn_batches

#: Chat roles recorded as turns; other roles (function, chatbot, ...) are recorded as ``tool``.
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system", "tool": "tool"}


class MemoryEngineRetriever(BaseRetriever):
    """Retrieves from the engine's fused search; ``search_fields`` are passed to the search request
    (``preset``, ``min_score``, ``as_of``, ...)."""

    def __init__(self, client: MemoryEngineClient, *, async_client: AsyncMemoryEngineClient | None = None,
                 limit: int = 10, **search_fields: Any) -> None:
        super().__init__()
        self._client = client
        self._async_client = async_client
        self._fields = {"limit": limit, **search_fields}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return nodes(self._client.search(query_bundle.query_str, **self._fields))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._async_client is None:
            return await asyncio.to_thread(self._retrieve, query_bundle)
        return nodes(await self._async_client.search(query_bundle.query_str, **self._fields))


def nodes(found: m.SearchResponseBody) -> list[NodeWithScore]:
    """The search results as nodes, best first."""
    out = []
    for result in found.results:
        metadata: dict[str, Any] = {"source_type": result.source_type,
                                    "tags": [] if isinstance(result, m.EpisodeSearchResult) else list(result.tags)}
        if isinstance(result, m.DocumentResult):
            metadata |= {"document_id": result.document_id, "path": result.path, "page": result.page,
                         "title": result.title, "chunk_index": result.chunk_index}
        elif isinstance(result, m.EpisodeSearchResult):
            metadata |= {"memory_id": result.memory_id, "conversation_id": result.conversation_id,
                         "turn_id": result.turn_id, "role": result.role, "created_at": result.created_at.isoformat()}
        else:
            metadata |= {"memory_id": result.memory_id, "memory_name": result.memory_name,
                         "created_at": result.created_at.isoformat()}
        if result.metadata:
            metadata["engine_metadata"] = result.metadata
        out.append(NodeWithScore(node=TextNode(id_=result.id, text=result.content, metadata=metadata),
                                 score=result.score))
    return out


class MemoryEngineMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for ``Memory(memory_blocks=[...])`` kept in one engine memory."""

    name: str = "memory_engine"
    description: str | None = "Facts and past conversation turns recalled from memory-engine."
    client: AsyncMemoryEngineClient = Field(exclude=True)
    memory_id: str
    #: The conversation flushed messages are recorded in (a message's ``session_id`` wins).
    conversation_id: str = "llamaindex"
    limit: int = 5
    #: How many of the latest messages make the query.
    query_messages: int = 2
    extract: bool = False

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = " ".join((msg.content or "") for msg in (messages or [])[-self.query_messages:]).strip()
        if not query:
            return ""
        found = await self.client.search(query, memory_ids=[self.memory_id], limit=self.limit,
                                         include=["episodes"])
        # past turns are ranked with the facts (source_type "episode"), each by the passage that matched
        return "\n".join(f"- {'(said earlier) ' if isinstance(r, m.EpisodeSearchResult) else ''}{r.content}"
                         for r in found.results)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        by_conversation: dict[str, list[dict[str, Any]]] = {}
        for msg in messages:
            text = msg.content or ""
            if not text.strip():
                continue
            conversation = str(msg.additional_kwargs.get("session_id") or self.conversation_id)
            by_conversation.setdefault(conversation, []).append(
                {"role": _ROLES.get(str(msg.role.value), "tool"), "content": text})
        for conversation, turns in by_conversation.items():
            for batch in turn_batches(turns):
                await self.client.record_turns(self.memory_id, conversation, batch, extract=self.extract or None)
