"""The LlamaIndex adapter through LlamaIndex's own API against a live engine: the retriever's
``retrieve``/``aretrieve`` return the engine's fused ranking (memories and documents) as nodes with
the engine's ids, scores, paths and pages; a ``Memory`` with the memory block flushes old messages
into the engine as turns (visible through the turns API) and recalls them on ``get``."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

from memory_engine_client import AsyncMemoryEngineClient, MemoryEngineClient
from memory_engine_client.integrations.llamaindex import MemoryEngineMemoryBlock, MemoryEngineRetriever


def test_the_retriever_returns_memories_and_documents_as_ranked_nodes(
        client: MemoryEngineClient, async_client: AsyncMemoryEngineClient) -> None:
    memory = client.create_memory("llamaindex")
    fact = client.write_entry(memory.id, "The Lisbon office opens at 8 am on weekdays.")
    client.write_entry(memory.id, "Sam's favourite colour is teal.")
    path = f"handbook/{uuid.uuid4().hex}.md"
    document = client.create_document(path, "# Offices\n\nThe Porto office opens at 9 am and closes at 6 pm.\n",
                                      wait=True)
    retriever = MemoryEngineRetriever(client, memory_ids=[memory.id], document_ids=[document.id], limit=5)

    found = retriever.retrieve("When does the office open?")

    assert {n.node.node_id for n in found[:3]} >= {fact.id}
    assert [n.score for n in found] == sorted((n.score or 0.0 for n in found), reverse=True)
    [doc] = [n for n in found if n.node.metadata["source_type"] == "document"]
    assert doc.node.metadata["path"] == document.path and document.path.endswith(path)
    assert doc.node.metadata["document_id"] == document.id
    assert "page" in doc.node.metadata and "Porto office opens at 9 am" in doc.node.get_content()
    [mem] = [n for n in found if n.node.node_id == fact.id]
    assert mem.node.metadata["memory_id"] == memory.id and mem.node.get_content() == fact.content

    async def scenario() -> list[Any]:
        async with async_client as me:
            return await MemoryEngineRetriever(client, async_client=me, memory_ids=[memory.id],
                                               document_ids=[document.id], limit=5).aretrieve(
                "When does the office open?")

    assert [n.node.node_id for n in asyncio.run(scenario())] == [n.node.node_id for n in found]


def test_a_memory_flushes_old_messages_into_the_engine_and_recalls_them(
        client: MemoryEngineClient, async_client: AsyncMemoryEngineClient) -> None:
    memory_record = client.create_memory("llamaindex-memory")

    said = [("user", "My sister Ana lives in Porto and teaches chemistry."), ("assistant", "Good to know about Ana."),
            ("user", "I also have a dog called Pixel who loves the beach."), ("assistant", "Pixel sounds lovely.")]

    async def scenario() -> list[ChatMessage]:
        async with async_client as me:
            block = MemoryEngineMemoryBlock(client=me, memory_id=memory_record.id, conversation_id="chat-1")
            memory = Memory.from_defaults(session_id="chat-1", token_limit=40, chat_history_token_ratio=0.5,
                                          token_flush_size=10, memory_blocks=[block],
                                          tokenizer_fn=lambda text: text.split())
            await memory.aput_messages([ChatMessage(role=role, content=text) for role, text in said])
            await memory.aput(ChatMessage(role="user", content="What does my sister Ana teach in Porto?"))
            return await memory.aget()

    history = asyncio.run(scenario())

    # the oldest messages left short-term memory for the engine, in order, as turns of the conversation
    turns = [(t.role, t.content) for t in client.iter_turns(memory_record.id, "chat-1")]
    assert turns and turns == said[:len(turns)]
    # and the block recalled them for the question about Ana
    system = history[0]
    assert system.role.value == "system" and "Ana lives in Porto and teaches chemistry" in (system.content or "")
