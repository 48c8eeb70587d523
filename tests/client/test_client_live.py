"""The Python client against a live local engine (embedded PostgreSQL, the offline model, the HTTP
gateway): every operation, cursor pagination, typed errors, the async variant, and the served
OpenAPI document checked against the client."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest

from memory_engine.ports.extraction_runs import RunKey
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
from tests.support.converter import ConverterService, converter_service
from tests.support.engine import RunningEngine, running_engine


@pytest.fixture(scope="module")
def converter() -> Iterator[ConverterService]:
    with converter_service() as service:
        yield service


@pytest.fixture(scope="module")
def engine(database_url: str, tmp_path_factory: pytest.TempPathFactory, converter: ConverterService) -> Any:
    # the converter stub listens on 127.0.0.1: the operator allows exactly it (CONVERTER_ALLOWED_HOSTS)
    with running_engine(database_url, tmp_path_factory.mktemp("client-home"),
                        CONVERTER_ALLOWED_HOSTS=converter.host_port) as running:
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


def _seed_run(engine: RunningEngine, memory: models.Memory, event_id: str, conversation_id: str = "conv-1") -> str:
    """One finished extraction run, as the extraction consumer records it (no chat model here)."""
    assert engine.engine.container is not None
    runs = engine.engine.container.extraction_runs
    claim = runs.claim(RunKey(memory.project_id, event_id, memory.id, conversation_id, f"turn-{event_id}"),
                       stale_after=timedelta(minutes=5))
    runs.finish(memory.project_id, claim.run.id, status="completed",
                summary={"candidates": 1, "created": 1, "updated": 0, "skipped": 0, "superseded": 0}, error=None)
    return str(claim.run.id)


def test_batch_writes_and_deletes(client: MemoryEngineClient) -> None:
    memory = client.create_memory("batch", default_ttl=3600)
    assert memory.default_ttl == 3600 and client.get_memory(memory.id).default_ttl == 3600
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    items: list[Any] = [
        {"memory_id": memory.id, "content": "Dana works at the harbour office."},
        models.EntryCreateRequest(memory_id=memory.id, content="Dana's badge number is 4471.", expires_at=expires),
        {"memory_id": memory.id, "content": "Dana works at the harbour office."},  # a repeat inside the batch
        {"memory_id": memory.id, "content": "x", "confidence": 2},  # invalid: rejected, the others written
    ]
    result = client.write_entries(items)
    assert isinstance(result, models.EntryBatchResult)
    assert [r.action for r in result.results] == ["created", "created", "skipped", "rejected"]
    assert (result.created, result.skipped, result.rejected) == (2, 1, 1)
    assert result.results[3].entry is None and result.results[3].error["code"] == "validation_error"
    first, second = (r.entry for r in result.results[:2])
    assert first is not None and second is not None and result.results[2].entry.id == first.id  # type: ignore[union-attr]
    assert second.expires_at == expires
    assert first.expires_at is not None and first.expires_at > datetime.now(UTC)  # the memory's default_ttl
    assert client.get_entry(second.id).expires_at == expires

    # a repeat of the batch (what a retry sends) skips everything already stored
    again = client.write_entries(items[:2], duplicate_threshold=0.9)
    assert (again.created, again.skipped) == (0, 2)

    deleted = client.delete_entries([first.id, second.id, first.id, "ent_missing"])
    assert isinstance(deleted, models.EntryBatchDeleteResult) and (deleted.deleted, deleted.not_found) == (2, 2)
    assert [(d.index, d.action) for d in deleted.results] == [(0, "deleted"), (1, "deleted"), (2, "not_found"),
                                                              (3, "not_found")]
    assert client.list_entries(memory_id=memory.id).data == []
    with pytest.raises(UnprocessableEntityError):
        client.delete_entries([])


def test_extraction_runs_list_and_iterate(engine: RunningEngine, client: MemoryEngineClient) -> None:
    memory = client.create_memory("runs")
    assert client.list_extraction_runs(memory_id=memory.id).data == []  # nothing extracted yet
    ids = [_seed_run(engine, memory, f"evt-client-{i}") for i in range(3)]
    page = client.list_extraction_runs(memory_id=memory.id, limit=2)
    assert isinstance(page, models.ExtractionRunPage) and len(page.data) == 2 and page.next_cursor
    runs = list(client.iter_extraction_runs(memory_id=memory.id, page_size=2))
    assert [r.id for r in runs] == list(reversed(ids))  # newest first
    assert runs[0].status == "completed" and runs[0].summary == {"candidates": 1, "created": 1, "updated": 0,
                                                                  "skipped": 0, "superseded": 0}
    assert [r.id for r in client.iter_extraction_runs(event_id="evt-client-1")] == [ids[1]]
    assert client.list_extraction_runs(memory_id=memory.id, status="failed").data == []
    with pytest.raises(UnprocessableEntityError):
        client.list_extraction_runs(cursor="nope")


def test_export_then_import_round_trip(client: MemoryEngineClient, tmp_path: Path) -> None:
    memory = client.create_memory("export", tags=["export"], description="to move")
    client.write_entries([
        {"memory_id": memory.id, "content": "Erin's flight to Oslo leaves on Friday.",
         "entities": [{"name": "Erin", "type": "person"}]},
        {"memory_id": memory.id, "content": "Erin is allergic to peanuts."},
        {"memory_id": memory.id, "content": "Erin's manager is Frank."},
    ])
    lines = list(client.export_memory(memory.id))
    assert [line["type"] for line in lines[:2]] == ["header", "memory"]
    assert lines[0]["vectors"] is True and lines[1]["id"] == memory.id
    assert len([line for line in lines if line["type"] == "entry"]) == 3

    imported = client.import_memory(lines)  # the parsed lines go back as JSONL
    assert isinstance(imported, models.ImportResult)
    assert (imported.entries, imported.embedded, imported.vectors_reused) == (3, 0, True)
    assert imported.memory.id != memory.id and imported.memory.name == "export"
    assert imported.memory.metadata and imported.memory.metadata["imported_from"]["id"] == memory.id
    found = client.search("Who is Erin's manager?", memory_ids=[imported.memory.id], limit=1)
    assert found.results[0].content == "Erin's manager is Frank."

    target = tmp_path / "export.jsonl"
    count = client.export_memory_to_file(memory.id, target, vectors=False)
    assert count == len(lines) and not (tmp_path / "export.jsonl.part").exists()
    again = client.import_memory_file(target)  # no vectors in the file: this deployment embeds again
    assert again.entries == 3 and again.embedded > 0 and again.vectors_reused is False
    assert client.import_memory(target.read_text()).entries == 3  # JSONL text as it is

    with pytest.raises(NotFoundError):
        list(client.export_memory("mem_missing"))
    with pytest.raises(NotFoundError):
        client.export_memory_to_file("mem_missing", tmp_path / "missing.jsonl")
    assert not (tmp_path / "missing.jsonl").exists() and not (tmp_path / "missing.jsonl.part").exists()
    with pytest.raises(UnprocessableEntityError):
        client.import_memory(b"not json\n")


def test_forget_a_conversation_and_an_entity(engine: RunningEngine, client: MemoryEngineClient) -> None:
    memory = client.create_memory("forget")
    client.write_entries([
        {"memory_id": memory.id, "content": "Gus moved to Lisbon in May.", "source_conversation_id": "conv-gus"},
        {"memory_id": memory.id, "content": "Gus adopted a grey cat.", "source_conversation_id": "conv-gus"},
        {"memory_id": memory.id, "content": "Hana teaches violin.", "entities": [{"name": "Hana", "type": "person"}]},
        {"memory_id": memory.id, "content": "The office closes at six."},
    ])
    _seed_run(engine, memory, "evt-forget", conversation_id="conv-gus")

    gone = client.forget(conversation_id="conv-gus", memory_id=memory.id)
    assert isinstance(gone, models.ForgetResult)
    assert (gone.deleted.entries, gone.deleted.extraction_runs) == (2, 1)
    repeat = client.forget(conversation_id="conv-gus", memory_id=memory.id)  # what a retry sends: zeros
    assert repeat.deleted.model_dump() == {"entries": 0, "episodes": 0, "extraction_runs": 0, "entities": 0}

    hana = client.forget(memory_id=memory.id, entity="Hana")
    assert hana.deleted.entries == 1 and hana.deleted.entities >= 1
    assert [e.content for e in client.iter_entries(memory_id=memory.id)] == ["The office closes at six."]
    with pytest.raises(NotFoundError):
        client.forget(conversation_id="conv-gus", memory_id="mem_missing")
    with pytest.raises(UnprocessableEntityError):
        client.forget()


def test_purge_answers_counts_and_a_plain_delete_answers_none(engine: RunningEngine,
                                                               client: MemoryEngineClient) -> None:
    memory = client.create_memory("purge")
    client.write_entries([{"memory_id": memory.id, "content": "Ivan speaks Finnish.",
                           "entities": [{"name": "Ivan", "type": "person"}]},
                          {"memory_id": memory.id, "content": "Ivan runs marathons."}])
    _seed_run(engine, memory, "evt-purge")
    purged = client.delete_memory(memory.id, purge=True)
    assert isinstance(purged, models.ForgetResult)
    assert (purged.deleted.entries, purged.deleted.extraction_runs) == (2, 1) and purged.deleted.entities >= 1
    with pytest.raises(NotFoundError):
        client.delete_memory(memory.id, purge=True)
    assert client.list_extraction_runs(memory_id=memory.id).data == []
    plain = client.create_memory("plain delete")
    assert client.delete_memory(plain.id) is None


def test_search_with_a_preset(client: MemoryEngineClient) -> None:
    memory = client.create_memory("presets")
    client.write_entries([{"memory_id": memory.id, "content": "Jun keeps bees on the roof."},
                          {"memory_id": memory.id, "content": "Jun's car is a blue hatchback."}])
    for preset in ("hybrid", "vector_only", "rrf_v1"):  # documents are searched too: look at the facts
        found = client.search("Who keeps bees?", memory_ids=[memory.id], preset=preset, limit=5)
        facts = [r.content for r in found.results if isinstance(r, models.MemoryResult)]
        assert facts[0] == "Jun keeps bees on the roof.", preset
    keyword = client.search("hatchback", memory_ids=[memory.id], preset="keyword_only")
    assert [r.content for r in keyword.results] == ["Jun's car is a blue hatchback."]
    with pytest.raises(pydantic.ValidationError):  # checked before sending
        client.search("bees", preset="fastest")


def test_the_async_client_lifecycle(engine: RunningEngine, tmp_path: Path) -> None:
    key = engine.key("client-async-lifecycle", "read,write")

    async def scenario() -> None:
        async with AsyncMemoryEngineClient(engine.base_url, key) as me:
            memory = await me.create_memory("async lifecycle", default_ttl=86400)
            batch = await me.write_entries([
                {"memory_id": memory.id, "content": "Kai plays the oboe.", "source_conversation_id": "conv-kai"},
                {"memory_id": memory.id, "content": "Kai lives near the river."},
                {"memory_id": memory.id, "content": "Kai's dog is called Pepper."},
            ])
            assert (batch.created, batch.rejected) == (3, 0)
            lines = [line async for line in me.export_memory(memory.id)]
            assert lines[0]["type"] == "header" and len([x for x in lines if x["type"] == "entry"]) == 3
            target = tmp_path / "async.jsonl"
            assert await me.export_memory_to_file(memory.id, target) == len(lines)
            imported = await me.import_memory_file(target)
            assert imported.entries == 3 and imported.memory.default_ttl == 86400
            found = await me.search("oboe", memory_ids=[imported.memory.id], preset="keyword_only")
            assert [r.content for r in found.results] == ["Kai plays the oboe."]
            forgotten = await me.forget(conversation_id="conv-kai", memory_id=memory.id)
            assert forgotten.deleted.entries == 1
            runs = [r async for r in me.iter_extraction_runs(memory_id=memory.id)]
            assert runs == []
            ids = [e.id async for e in me.iter_entries(memory_id=imported.memory.id)]
            assert (await me.delete_entries(ids)).deleted == 3
            purged = await me.delete_memory(memory.id, purge=True)
            assert purged is not None and purged.deleted.entries == 2
            assert await me.delete_memory(imported.memory.id) is None
            with pytest.raises(NotFoundError):
                [line async for line in me.export_memory(memory.id)]

    anyio.run(scenario)


def test_ingestion_rules_and_a_deferred_converter_over_http(engine: RunningEngine, converter: ConverterService) -> None:
    """Given a live engine and a converter that answers pending, then fetches the file from its signed
    download URL and POSTs the pages to its signed callback URL over HTTP (as a real one would), When an
    upload of a type only that converter reads arrives, Then the document becomes ready and searchable."""
    with MemoryEngineClient(engine.base_url, engine.key("client-rules", "admin")) as admin:
        rule = admin.create_ingestion_rule("application/x-logbook", {"type": "http", "url": converter.url("/deferred")},
                                           file_delivery="download_url", chunk_strategy="page")
        assert isinstance(rule.converter, models.HttpConverter) and rule.file_delivery == "download_url"
        assert [r.id for r in admin.list_ingestion_rules().data] == [rule.id]
        assert admin.get_ingestion_rule(rule.id).content_type_glob == "application/x-logbook"
        with pytest.raises(UnprocessableEntityError):
            admin.create_ingestion_rule("not a glob", {"type": "ocr"})
        with pytest.raises(UnprocessableEntityError):  # the engine's own API: loopback, not allowed
            admin.create_ingestion_rule("application/x-own", {"type": "http", "url": f"{engine.base_url}/v1/memories"})
        upload = admin.upload_document("/logs/voyage.log", b"gale from the north west\fanchored in the bay",
                                       content_type="application/x-logbook")
        deadline = datetime.now(UTC) + timedelta(seconds=60)
        doc = next(d for d in admin.iter_documents(path_prefix="/logs/"))
        while doc.status in ("pending", "processing") and datetime.now(UTC) < deadline:
            anyio.run(anyio.sleep, 0.2)
            doc = admin.get_document(doc.id)
        assert doc.status == "ready", (doc.error, converter.callbacks)
        assert doc.total_pages == 2 and doc.ingestion_rule_id == rule.id and upload.key
        assert converter.callbacks[-1][0] == 200 and converter.callbacks[-1][1]["status"] == "accepted"
        assert converter.last()["body"]["callback_url"].startswith(engine.base_url)
        hits = admin.search("gale north west", document_paths=["/logs/"]).results
        assert hits and isinstance(hits[0], models.DocumentResult) and hits[0].page == 1
        replaced = admin.replace_ingestion_rule(rule.id, "application/x-logbook", {"type": "ocr"})
        assert isinstance(replaced.converter, models.OcrConverter)
        admin.delete_ingestion_rule(rule.id)
        with pytest.raises(NotFoundError):
            admin.get_ingestion_rule(rule.id)


def test_turns_record_list_delete_sync_and_async(engine: RunningEngine, client: MemoryEngineClient) -> None:
    memory = client.create_memory("turns")
    sent = [{"role": "user", "content": "I moved to Lisbon."}, models.TurnInput(role="assistant", content="Nice!"),
            {"role": "tool", "content": "{}", "metadata": {"call_id": "c1"}}]
    recorded = client.record_turns(memory.id, "conv", sent)
    assert [t.created for t in recorded.turns] == [True] * 3 and recorded.extraction == "not_requested"
    # the client gave every turn an id, so sending the same turns again stores nothing new
    again = client.record_turns(memory.id, "conv", [{"turn_id": t.turn_id, "role": "user", "content": "x"}
                                                    for t in recorded.turns])
    assert [t.created for t in again.turns] == [False] * 3
    turns = list(client.iter_turns(memory.id, "conv", page_size=2))
    assert [(t.role, t.content) for t in turns] == [("user", "I moved to Lisbon."), ("assistant", "Nice!"), ("tool", "{}")]
    assert turns[2].metadata == {"call_id": "c1"}
    assert [t.id for t in client.list_turns(memory.id, "conv", order="desc", limit=1).data] == [turns[2].id]
    client.delete_turn(memory.id, turns[0].turn_id or "", conversation_id="conv")
    with pytest.raises(NotFoundError):
        client.delete_turn(memory.id, turns[0].turn_id or "")

    async def scenario() -> None:
        async with AsyncMemoryEngineClient(engine.base_url, engine.key("client", "read,write")) as me:
            await me.record_turns(memory.id, "conv", [{"role": "user", "content": "And a cat."}])
            listed = [t.content async for t in me.iter_turns(memory.id, "conv")]
            assert listed == ["Nice!", "{}", "And a cat."]
            await me.delete_conversation_turns(memory.id, "conv")
            assert (await me.list_turns(memory.id, "conv")).data == []

    anyio.run(scenario)
