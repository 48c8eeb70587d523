"""The OpenAI Agents SDK adapter driven by the SDK's own ``Runner`` with a scripted model (no
framework mocks, no network): the session's items round-trip exactly and in order through the
engine's turns, the memory tools are called by the run, what they write is in
``GET /v1/memory-entries``, and what the engine holds comes back to the model through them."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, Runner, set_tracing_disabled

from memory_engine_client import AsyncMemoryEngineClient, MemoryEngineClient
from memory_engine_client.integrations.openai_agents import MemoryEngineSession, memory_tools, turn_of
from tests.support.scripted_models import ScriptedAgentsModel, call, say

set_tracing_disabled(True)


def test_a_runner_records_recalls_and_round_trips_its_session(client: MemoryEngineClient,
                                                              async_client: AsyncMemoryEngineClient) -> None:
    memory = client.create_memory("openai-agents")
    model = ScriptedAgentsModel([
        call("write_memory", 1, fact="Sam lives in Lisbon and loves green tea."), say("Noted!", 2),
        call("search_memory", 3, query="Where does Sam live?"), say("You live in Lisbon.", 4),
    ])

    async def scenario() -> tuple[Any, Any, list[Any], list[Any]]:
        async with async_client as me:
            agent = Agent(name="assistant", instructions="Remember things.", model=model,
                          tools=memory_tools(me, memory.id))
            session = MemoryEngineSession("conv-1", memory_id=memory.id, client=me)
            first = await Runner.run(agent, "I'm Sam. I live in Lisbon and I love green tea.", session=session)
            after_first = await session.get_items()
            second = await Runner.run(agent, "Where do I live?", session=session)
            return first, second, after_first, await session.get_items()

    first, second, after_first, items = asyncio.run(scenario())

    # the write tool went through the agent write path: the fact is an entry of the memory
    entries = client.list_entries(memory_id=memory.id).data
    assert [(e.content, e.source_type) for e in entries] == [("Sam lives in Lisbon and loves green tea.", "agent")]
    # the session holds exactly what the runner produced, in order, and gave it back to the model
    assert after_first == first.to_input_list()
    assert items == second.to_input_list()
    assert [i.get("type", "message") for i in items] == ["message", "function_call", "function_call_output",
                                                         "message"] * 2
    assert model.inputs[2][:4] == after_first  # the second run started from the stored history
    # the search tool's answer reached the model: the engine's fact, with its score
    [recall] = [i for i in model.inputs[3] if i.get("type") == "function_call_output" and i["call_id"] == "call_3"]
    assert recall["output"].startswith("- Sam lives in Lisbon and loves green tea. (score ")
    assert second.final_output == "You live in Lisbon."
    # each item is one turn of the conversation, with its readable text as content
    turns = list(client.iter_turns(memory.id, "conv-1"))
    assert [t.role for t in turns] == ["user", "tool", "tool", "assistant"] * 2
    assert turns[3].content == "Noted!" and turns[1].content.startswith("write_memory(")


def test_session_limit_pop_clear_and_large_items(client: MemoryEngineClient,
                                                 async_client: AsyncMemoryEngineClient) -> None:
    memory = client.create_memory("openai-agents-session")
    long_text = "word " * 40_000  # 200 KB: too large for turn metadata, kept as the turn's content
    big_parts = {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
                 "content": [{"type": "output_text", "text": "x" * 70_000, "annotations": []}]}
    sent: list[Any] = [{"role": "user", "content": f"message {i}"} for i in range(103)]  # two record_turns calls
    sent += [{"role": "developer", "content": long_text}, big_parts,
             {"type": "function_call_output", "call_id": "c1", "output": "{}"}]

    async def scenario() -> dict[str, Any]:
        async with async_client as me:
            session = MemoryEngineSession("conv-2", memory_id=memory.id, client=me)
            other = MemoryEngineSession("conv-3", memory_id=memory.id, client=me)
            await session.add_items(sent)
            await other.add_items([{"role": "user", "content": "elsewhere"}])
            out = {"all": await session.get_items(), "last3": await session.get_items(limit=3),
                   "none": await session.get_items(limit=0), "popped": await session.pop_item(),
                   "after_pop": await session.get_items(limit=2)}
            await session.clear_session()
            out |= {"cleared": await session.get_items(), "popped_empty": await session.pop_item(),
                    "other": await other.get_items()}
            return out

    got = asyncio.run(scenario())

    assert got["all"] == sent
    assert got["last3"] == sent[-3:] and got["none"] == []
    assert got["popped"] == sent[-1] and got["after_pop"] == sent[-3:-1]
    assert got["cleared"] == [] and got["popped_empty"] is None
    assert got["other"] == [{"role": "user", "content": "elsewhere"}]
    assert turn_of(sent[103])["role"] == "system" and turn_of(big_parts)["metadata"] == {
        "openai_agents_item_in_content": True}
