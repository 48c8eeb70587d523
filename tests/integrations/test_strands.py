"""The Strands Agents adapter through Strands' own ``Agent`` and ``MemoryManager`` with a scripted
model (no network, no framework mocks) against a live engine: the manager's ``add_memory`` tool
writes through the agent write path (visible in ``GET /v1/memory-entries``), its ``search_memory``
tool and its context injection bring the engine's facts back to the model, and ``add_messages``
(server-side extraction's sink) records turns once per batch."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from strands import Agent
from strands.memory import AddMessagesContext, MemoryManager

from memory_engine_client import AsyncMemoryEngineClient, MemoryEngineClient
from memory_engine_client.integrations.strands import MemoryEngineMemoryStore, memory_tools
from tests.support.scripted_models import ScriptedStrandsModel


def test_an_agent_records_and_recalls_through_the_memory_manager(
        client: MemoryEngineClient, async_client: AsyncMemoryEngineClient) -> None:
    memory = client.create_memory("strands")
    model = ScriptedStrandsModel([
        {"tool": "add_memory", "id": "t1", "input": {"entries": ["Sam is vegetarian and cooks Thai food."]}},
        {"text": "Noted."},
        {"tool": "search_memory", "id": "t2", "input": {"query": "What food does Sam eat?"}},
        {"text": "You are vegetarian."},
    ])

    async def scenario() -> Any:
        async with async_client as me:
            store = MemoryEngineMemoryStore(me, memory_id=memory.id)
            manager = MemoryManager(stores=[store], add_tool_config=True)
            agent = Agent(model=model, memory_manager=manager, callback_handler=None)
            await agent.invoke_async("Remember that I'm vegetarian and cook Thai food.")
            return await agent.invoke_async("Which food does Sam eat?")

    answer = asyncio.run(scenario())

    entries = client.list_entries(memory_id=memory.id).data
    assert [(e.content, e.source_type) for e in entries] == [("Sam is vegetarian and cooks Thai food.", "agent")]
    # the search tool's result reached the model, with the engine's id and score
    assert '"content": "Sam is vegetarian and cooks Thai food."' in model.inputs[3].replace('\\"', '"')
    assert entries[0].id in model.inputs[3] and '"score"' in model.inputs[3].replace('\\"', '"')
    # and injection put the fact in front of the model before the second question was answered (an
    # empty memory injected nothing before the first)
    injected = model.inputs[2][model.inputs[2].index("<memory>"):]
    assert "Sam is vegetarian and cooks Thai food." in injected[:injected.index("</memory>")]
    assert "<memory>" not in model.inputs[0]
    assert "You are vegetarian." in str(answer)


def test_add_messages_records_each_batch_once_as_turns(client: MemoryEngineClient,
                                                       async_client: AsyncMemoryEngineClient) -> None:
    memory = client.create_memory("strands-turns")
    messages: list[Any] = [
        {"role": "user", "content": [{"text": "I moved to Lisbon last spring."}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "x", "name": "lookup", "input": {}}}]},
        {"role": "assistant", "content": [{"text": "Lisbon is lovely."}]},
    ]

    async def scenario() -> tuple[list[str], list[str]]:
        async with async_client as me:
            store = MemoryEngineMemoryStore(me, memory_id=memory.id, conversation_id="s-1")
            context = AddMessagesContext(sequence_numbers=[4, 5, 7])
            return await store.add_messages(messages, context), await store.add_messages(messages, context)

    first, retried = asyncio.run(scenario())

    assert first == retried and len(first) == 3
    turns = list(client.iter_turns(memory.id, "s-1"))
    assert [(t.role, t.content) for t in turns] == [
        ("user", "I moved to Lisbon last spring."), ("tool", json.dumps([messages[1]["content"][0]])),
        ("assistant", "Lisbon is lovely.")]


def test_the_plain_tools_record_and_recall_in_an_agent(client: MemoryEngineClient,
                                                      async_client: AsyncMemoryEngineClient) -> None:
    memory = client.create_memory("strands-tools")
    model = ScriptedStrandsModel([
        {"tool": "record_memory", "id": "t1", "input": {"fact": "Kim's flight to Oslo leaves at 7 am."}},
        {"tool": "recall_memory", "id": "t2", "input": {"query": "When does Kim's flight leave?"}},
        {"text": "At 7 am."},
    ])

    async def scenario() -> Any:
        async with async_client as me:
            agent = Agent(model=model, tools=memory_tools(me, memory.id), callback_handler=None)
            return await agent.invoke_async("Remember my flight time, then tell me when it leaves.")

    answer = asyncio.run(scenario())

    assert [(e.content, e.source_type) for e in client.list_entries(memory_id=memory.id).data] == [
        ("Kim's flight to Oslo leaves at 7 am.", "agent")]
    assert "created: Kim's flight to Oslo leaves at 7 am." in model.inputs[1]
    assert "- Kim's flight to Oslo leaves at 7 am. (score " in model.inputs[2]
    assert "At 7 am." in str(answer)
