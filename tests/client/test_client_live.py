"""The Python client against a live local engine (embedded PostgreSQL, the offline model, the HTTP
gateway): every operation, cursor pagination, typed errors, the async variant, and the served
OpenAPI document checked against the client."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from memory_engine_client import (
    AsyncMemoryEngineClient,
    AuthenticationError,
    MemoryEngineClient,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
    models,
)
from tests.client.contract import compare_operations
from tests.support.engine import RunningEngine, running_engine


@pytest.fixture(scope="module")
def engine(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_engine(database_url, tmp_path_factory.mktemp("client-home")) as running:
        yield running


@pytest.fixture(scope="module")
def client(engine: RunningEngine) -> Any:
    with MemoryEngineClient(engine.base_url, engine.key("client", "read,write")) as me:
        yield me


def test_the_served_openapi_document_matches_the_client(engine: RunningEngine) -> None:
    status, document = engine.call("GET", "/v1/openapi.json", None)
    assert status == 200 and compare_operations(document) == []


def test_memories_and_entries_every_operation_and_pagination(client: MemoryEngineClient) -> None:
    assert client.health().status == "ok"
    created = [client.create_memory(f"m{i}", tags=["client", f"n:{i}"], description="d") for i in range(5)]
    assert all(isinstance(m, models.Memory) for m in created)
    page = client.list_memories(tags=["client"], limit=2)
    assert len(page.data) == 2 and page.next_cursor
    assert [m.id for m in client.iter_memories(tags=["client"], page_size=2)] == [m.id for m in reversed(created)]
    memory = client.update_memory(created[0].id, description="updated")
    assert client.get_memory(memory.id).description == "updated"

    first = client.write_entry(memory.id, "Alice's manager is Bob.", entities=[{"name": "Alice", "type": "person"}])
    assert isinstance(first, models.EntryWriteResult) and first.action == "created"
    assert client.write_entry(memory.id, "Alice's manager is Bob.").action == "skipped"
    agent = client.write_entry(memory.id, "Alice likes green tea.", source_type="agent", agent={"generation_id": "g1"})
    assert agent.action == "created" and agent.source_generation_id == "g1" and agent.degraded  # no chat model here
    for i in range(3):
        client.write_entry(memory.id, f"Fact number {i} about the weather in town {i}.")
    assert len(client.list_entries(memory_id=memory.id, limit=2).data) == 2
    entries = list(client.iter_entries(memory_id=memory.id, page_size=2))
    assert len(entries) == 5 and len({e.id for e in entries}) == 5
    assert client.get_entry(first.id).content == "Alice's manager is Bob."
    assert client.replace_entry(first.id, tags=["work"]).tags == ["work"]

    found = client.search("Who is Alice's manager?", memory_ids=[memory.id], render=True, limit=3)
    assert isinstance(found.results[0], models.MemoryResult) and found.results[0].id == first.id
    assert found.context and "Alice's manager is Bob." in found.context

    client.delete_entry(first.id)
    with pytest.raises(NotFoundError) as missing:
        client.get_entry(first.id)
    assert missing.value.status == 404 and missing.value.code == "not_found"
    client.delete_memory(created[-1].id)
    assert created[-1].id not in {m.id for m in client.iter_memories(tags=["client"])}


def test_documents_and_embeddings_every_operation(client: MemoryEngineClient) -> None:
    doc = client.create_document("/client/leave.md", "# Leave\n\nEmployees get 25 days of paid leave.", wait=True)
    assert doc.status == "ready"
    batch = client.create_documents([{"path": "/client/a.md", "content": "alpha"}, {"path": "", "content": "x"}])
    assert (batch.created, batch.rejected) == (1, 1) and batch.results[1].action == "rejected"
    upload = client.upload_document("/client/uploaded.md", b"# Uploaded\n\nvia the upload URL", content_type="text/markdown")
    assert upload.method == "PUT" and upload.key
    assert client.list_documents(path_prefix="/client/", limit=1).next_cursor
    paths = {d.path for d in client.iter_documents(path_prefix="/client/", page_size=1)}
    assert {"/client/leave.md", "/client/a.md"} <= paths
    assert client.get_document(doc.id).path == "/client/leave.md"
    assert client.document_status(doc.id).status == "ready"
    again = client.reingest_document(doc.id, chunk_strategy="size", chunk_size=200, chunk_overlap=0, wait=True)
    assert again.chunk_strategy == "size"
    hits = client.search("paid leave", document_paths=["/client/"], limit=1).results
    assert isinstance(hits[0], models.DocumentResult) and hits[0].path == "/client/leave.md"
    client.delete_document(doc.id)
    with pytest.raises(NotFoundError):
        client.document_status(doc.id)

    one, many = client.embed("hello"), client.embed(["a", "b"])
    assert one.dimensions == 384 and len(one.data[0].embedding) == 384 and len(many.data) == 2


def test_typed_errors(engine: RunningEngine, client: MemoryEngineClient) -> None:
    with MemoryEngineClient(engine.base_url, "me_wrong") as wrong, pytest.raises(AuthenticationError) as caught:
        wrong.list_memories()
    assert caught.value.status == 401 and caught.value.code == "unauthorized"
    with MemoryEngineClient(engine.base_url, engine.key("client", "read")) as reader, \
            pytest.raises(PermissionDeniedError) as denied:
        reader.create_memory("nope")
    assert denied.value.code == "forbidden"
    memory = client.create_memory("errors")
    with pytest.raises(UnprocessableEntityError) as invalid:
        client.write_entry(memory.id, "x", confidence=2)
    assert invalid.value.code == "validation_error" and invalid.value.details[0]["field"] == "confidence"


def test_the_async_client(engine: RunningEngine) -> None:
    key = engine.key("client-async", "read,write")

    async def scenario() -> None:
        async with AsyncMemoryEngineClient(engine.base_url, key) as me:
            assert (await me.health()).database is True
            memory = await me.create_memory("async")
            written = await me.write_entry(memory.id, "Carol lives in Porto.")
            assert written.action == "created"
            for fact in ("Carol plays chess on Sundays.", "Carol's sister is a pilot.", "Carol drives a red van."):
                assert (await me.write_entry(memory.id, fact)).action == "created"
            entries = [e async for e in me.iter_entries(memory_id=memory.id, page_size=2)]
            assert len(entries) == 4
            found = await me.search("Where does Carol live?", memory_ids=[memory.id])
            assert found.results[0].content == "Carol lives in Porto."
            with pytest.raises(NotFoundError):
                await me.get_memory("mem_missing")

    anyio.run(scenario)
