"""The MCP server driven by the `mcp` SDK's own client over both transports against a live local
engine: streamable HTTP on `POST /v1/mcp` (stateless) and stdio (`memory-engine mcp` as a subprocess
talking to the engine by URL and key). Same keys, same scopes as the REST API."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.support.engine import RunningEngine, running_engine

TOOLS = {"search_knowledge", "write_memory", "list_memories", "create_memory", "get_memory_entries",
         "delete_memory_entry", "add_document", "document_status"}


@pytest.fixture(scope="module")
def engine(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_engine(database_url, tmp_path_factory.mktemp("mcp-home")) as running:
        yield running


@asynccontextmanager
async def http_session(engine: RunningEngine, key: str) -> AsyncIterator[ClientSession]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        async with streamable_http_client(f"{engine.base_url}/v1/mcp", http_client=client) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@asynccontextmanager
async def stdio_session(engine: RunningEngine, key: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memory_engine.cli", "mcp", "--url", engine.base_url, "--key", key],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text(result: CallToolResult) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    anyio.run(scenario)


async def _write_then_search(session: ClientSession, memory_name: str) -> None:
    """Lists the tools, makes a memory, writes two facts by its name, searches them back, reads history."""
    assert {t.name for t in (await session.list_tools()).tools} == TOOLS
    created = json.loads(text(await session.call_tool("create_memory", {"name": memory_name, "tags": ["user:alice"]})))
    memory_id = created["id"]
    for fact, entity in (("Alice's manager is Bob.", "Alice"), ("Alice is allergic to peanuts.", "Alice")):
        result = await session.call_tool("write_memory", {"memory": memory_name, "content": fact, "entities": [entity]})
        assert not result.isError, text(result)
        written = json.loads(text(result))
        assert written["action"] == "created" and written["memory_id"] == memory_id and written["id"].startswith("ment_")

    block = text(await session.call_tool("search_knowledge", {"query": "Who is Alice's manager?",
                                                             "memory_ids": [memory_id]}))
    assert block.startswith("<knowledge>") and "Alice's manager is Bob." in block

    compact = json.loads(text(await session.call_tool("search_knowledge", {
        "query": "peanuts", "memory_tags": ["user:*"], "render": False, "limit": 1})))
    assert compact[0]["content"] == "Alice is allergic to peanuts." and set(compact[0]) >= {"id", "memory", "score"}

    entries = json.loads(text(await session.call_tool("get_memory_entries", {"memory_id": memory_id})))
    assert [e["content"] for e in entries["entries"]] == ["Alice is allergic to peanuts.", "Alice's manager is Bob."]
    deleted = await session.call_tool("delete_memory_entry", {"entry_id": entries["entries"][0]["id"]})
    assert json.loads(text(deleted)) == {"deleted": entries["entries"][0]["id"]}
    listed = json.loads(text(await session.call_tool("list_memories", {})))
    assert memory_name in [m["name"] for m in listed["memories"]]


def test_http_transport_lists_writes_and_searches(engine: RunningEngine) -> None:
    key = engine.key("mcp-http", "read,write")

    async def scenario() -> None:
        async with http_session(engine, key) as session:
            await _write_then_search(session, "alice")
            # documents: add (blocking until indexed), status, then found by a search
            doc = json.loads(text(await session.call_tool("add_document", {
                "path": "/handbook/leave.md", "content": "# Leave\n\nEmployees get 25 days of paid leave.",
                "wait": True})))
            assert doc["status"] == "ready"
            status = json.loads(text(await session.call_tool("document_status", {"document_id": doc["id"]})))
            assert status["status"] == "ready" and status["progress"] == 1
            block = text(await session.call_tool("search_knowledge", {"query": "paid leave days",
                                                                     "document_paths": ["/handbook/"]}))
            assert "[Document: /handbook/leave.md" in block and "25 days" in block
            # conversation turns recorded over REST: searched with the facts when asked for
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
                memory = (await client.post(f"{engine.base_url}/v1/memories", json={"name": "turns"})).json()["id"]
                recorded = await client.post(f"{engine.base_url}/v1/memories/{memory}/turns", json={
                    "conversation_id": "c-1", "turns": [{"turn_id": "t-1", "role": "user",
                                                         "content": "My gym locker code is 5521."}]})
                assert recorded.status_code == 201, recorded.text
            found = text(await session.call_tool("search_knowledge", {
                "query": "gym locker code", "memory_ids": [memory], "include_episodes": True}))
            assert "user: My gym locker code is 5521. [Episode: c-1/t-1]" in found, found
            without = text(await session.call_tool("search_knowledge", {"query": "gym locker code",
                                                                       "memory_ids": [memory]}))
            assert "Episode" not in without, without

    run(scenario)


def test_http_transport_answers_a_wrong_key_with_401(engine: RunningEngine) -> None:
    async def scenario() -> None:
        async with http_session(engine, "me_wrong_key") as _:
            pass

    with pytest.raises(BaseException) as caught:
        run(scenario)
    assert "401" in _flatten(caught.value)
    # and in the SPEC error shape, as any route
    status, body = engine.call("POST", "/v1/mcp", "me_wrong_key", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert status == 401 and body["error"]["code"] == "unauthorized"


def test_a_read_only_key_can_search_but_not_write(engine: RunningEngine) -> None:
    writer, reader = engine.key("mcp-scopes", "read,write"), engine.key("mcp-scopes", "read")
    _, memory = engine.call("POST", "/v1/memories", writer, {"name": "facts"})

    async def scenario() -> None:
        async with http_session(engine, reader) as session:
            denied = await session.call_tool("write_memory", {"memory_id": memory["id"], "content": "Bob likes tea."})
            assert denied.isError and "forbidden" in text(denied)
            allowed = await session.call_tool("list_memories", {})
            assert not allowed.isError and json.loads(text(allowed))["memories"][0]["id"] == memory["id"]

    run(scenario)
    _, entries = engine.call("GET", f"/v1/memory-entries?memory_id={memory['id']}", writer)
    assert entries["data"] == []


def test_post_v1_mcp_speaks_plain_json_rpc(engine: RunningEngine) -> None:
    # a client that sends no Accept header still gets JSON; a notification is 202; a non-JSON-RPC body is 422
    key = engine.key("mcp-raw", "read")
    status, body = engine.call("POST", "/v1/mcp", key, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
    assert status == 200 and body["id"] == 7 and {t["name"] for t in body["result"]["tools"]} == TOOLS
    status, body = engine.call("POST", "/v1/mcp", key, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (status, body) == (202, None)
    status, body = engine.call("POST", "/v1/mcp", key, {"hello": "world"})
    assert status == 422 and body["error"]["code"] == "validation_error"


def test_stdio_transport_against_the_engine_by_url_and_key(engine: RunningEngine) -> None:
    key = engine.key("mcp-stdio", "read,write")
    reader = engine.key("mcp-stdio", "read")

    async def scenario() -> None:
        async with stdio_session(engine, key) as session:
            await _write_then_search(session, "alice-stdio")
        async with stdio_session(engine, reader) as session:
            denied = await session.call_tool("write_memory", {"memory": "alice-stdio", "content": "Bob likes tea."})
            assert denied.isError and "forbidden" in text(denied)
        async with stdio_session(engine, "me_wrong_key") as session:
            refused = await session.call_tool("list_memories", {})
            assert refused.isError and "unauthorized" in text(refused)

    run(scenario)


def _flatten(error: BaseException) -> str:
    out = f"{type(error).__name__}: {error}"
    for sub in getattr(error, "exceptions", ()):
        out += "\n" + _flatten(sub)
    if error.__cause__ is not None:
        out += "\n" + _flatten(error.__cause__)
    return out
