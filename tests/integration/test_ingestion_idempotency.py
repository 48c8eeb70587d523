"""Exactly-once effects: redelivered S3 events, retried embed batches after a mid-batch fault,
unchanged re-uploads, and re-ingest swapping chunk generations atomically."""

from __future__ import annotations

from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.documents import FILE_DEFAULTS, ChunkSettings, ChunkStrategy, DocumentRun, EmbedBatchInput
from memory_engine.domain.requests import CreateTextDocument, ReingestRequest
from memory_engine.errors import EmbeddingThrottled
from memory_engine.services.ingestion import steps
from memory_engine.services.ingestion.documents import reingest
from tests.support.ingestion import fast_runner, object_created_event

TEXT = "\n\n".join(f"Paragraph {i}: the pipeline stores chunk number {i} about topic {i % 7}." for i in range(60))



@pytest.fixture(scope="module")
def project_id(container: Container) -> str:
    return container.projects.get_or_create_project("acme").id


def _rows(container: Container, document_id: str) -> list[dict[str, Any]]:
    with container.database.connection() as conn:
        return conn.execute(
            "SELECT generation, chunk_index, content FROM document_chunks WHERE document_id = %s"
            " ORDER BY generation, chunk_index", (document_id,)
        ).fetchall()


def _put(container: Container, project_id: str, path: str, data: bytes) -> dict[str, Any]:
    key = steps.object_key(project_id, path)
    container.blob_store.put(key, data, content_type="text/plain")
    return object_created_event(container.blob_store.bucket, key, len(data))


def test_redelivered_event_leaves_exactly_one_set_of_chunks(container: Container, project_id: str) -> None:
    # Given a text file ingested from its S3 event with the size strategy (several embed batches)
    container.documents.prepare(project_id, steps.NewDocument(path="/r/a.txt", chunk_settings=ChunkSettings(
        strategy=ChunkStrategy.SIZE, size=120, overlap=20)), default_settings=FILE_DEFAULTS)
    event = _put(container, project_id, "/r/a.txt", TEXT.encode())
    runner = fast_runner(container)
    assert runner.run(event).status == "succeeded"
    doc = container.documents.find_by_path(project_id, "/r/a.txt")
    assert doc is not None and doc.total_chunks and doc.total_chunks > 32
    first = _rows(container, doc.id)
    # When EventBridge delivers the same event again (at-least-once)
    again = runner.run(event)
    # Then the run stops at Register and the chunks are exactly the same rows
    assert again.status == "unchanged"
    assert _rows(container, doc.id) == first
    assert len({(r["generation"], r["chunk_index"]) for r in first}) == len(first) == doc.total_chunks


def test_embed_retry_after_a_fault_mid_batch_does_not_duplicate(container: Container, project_id: str) -> None:
    # Given an invoker whose second embed batch writes its rows and then fails with throttling
    base = container.pipeline_runner.invoke
    calls = {"embed": 0}

    def flaky(handler: str, payload: dict[str, Any]) -> dict[str, Any]:
        result = base(handler, payload)
        if handler == "embed_batch":
            calls["embed"] += 1
            if calls["embed"] == 2:
                raise EmbeddingThrottled("injected: throttled after the batch was written")
        return result

    container.documents.prepare(project_id, steps.NewDocument(path="/r/b.txt", chunk_settings=ChunkSettings(
        strategy=ChunkStrategy.SIZE, size=120, overlap=20)), default_settings=FILE_DEFAULTS)
    event = _put(container, project_id, "/r/b.txt", TEXT.encode())
    # When the pipeline runs (the Map retries the failed batch per the Retry policy)
    result = fast_runner(container, invoke=flaky, map_concurrency=1).run(event)
    # Then it succeeds with exactly one row per chunk index
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, "/r/b.txt")
    assert doc is not None and doc.status.value == "ready"
    assert calls["embed"] == -(-(doc.total_chunks or 0) // 32) + 1  # every batch once, plus the one retry
    rows = _rows(container, doc.id)
    assert [r["chunk_index"] for r in rows] == list(range(doc.total_chunks or 0))
    assert doc.indexed_chunks == doc.total_chunks == len(rows)


def test_persistent_embedding_failure_ends_failed_not_processing(container: Container, project_id: str) -> None:
    base = container.pipeline_runner.invoke

    def broken(handler: str, payload: dict[str, Any]) -> dict[str, Any]:
        if handler == "embed_batch":
            raise EmbeddingThrottled("model keeps throttling")
        return base(handler, payload)

    event = _put(container, project_id, "/r/c.txt", b"Some text that will never be embedded.")
    result = fast_runner(container, invoke=broken).run(event)
    doc = container.documents.find_by_path(project_id, "/r/c.txt")
    assert result.status == "failed" and doc is not None and doc.status.value == "failed"
    assert doc.error and "embedding model failed after retries" in doc.error and doc.id in doc.error


def test_reingest_keeps_old_chunks_searchable_until_the_new_set_is_complete(
    container: Container, project_id: str
) -> None:
    # Given a ready text document (whole strategy: one chunk)
    c = container
    body = CreateTextDocument(path="/r/swap.md", content=TEXT)
    doc, started = steps_create(c, project_id, body)
    assert started
    ready = c.documents.get(project_id, doc.id)
    assert ready.status.value == "ready" and ready.total_chunks == 1
    old_generation = ready.active_generation
    # When a re-ingest with the size strategy is under way (extracted, chunked, one batch embedded)
    doc2 = c.documents.begin_reingest(project_id, doc.id, ChunkSettings(strategy=ChunkStrategy.SIZE,
                                                                              size=150, overlap=30))
    run = DocumentRun(project_id=project_id, document_id=doc.id, generation=doc2.ingest_generation)
    run = steps.chunk(steps.extract(run, c.ingestion_ports), c.ingestion_ports)
    steps.embed_batch(EmbedBatchInput(project_id=project_id, document_id=doc.id, generation=run.generation,
                                      batch=run.batches[0]), c.ingestion_ports)
    # Then search (active generation) still sees exactly the old set
    mid = c.documents.get(project_id, doc.id)
    assert mid.active_generation == old_generation and mid.status.value == "processing"
    assert mid.indexed_chunks == run.batches[0].count
    active = [r for r in _rows(c, doc.id) if r["generation"] == mid.active_generation]
    assert len(active) == 1 and active[0]["content"] == TEXT
    # When the remaining batches land and finalize runs
    for batch in run.batches[1:]:
        steps.embed_batch(EmbedBatchInput(project_id=project_id, document_id=doc.id, generation=run.generation,
                                          batch=batch), c.ingestion_ports)
    steps.finalize(run, c.ingestion_ports)
    # Then only the new generation remains, complete
    done = c.documents.get(project_id, doc.id)
    rows = _rows(c, doc.id)
    assert done.status.value == "ready" and done.active_generation == run.generation
    assert {r["generation"] for r in rows} == {run.generation} and len(rows) == done.total_chunks > 1


def test_reingest_through_the_service_and_a_stale_run_is_a_no_op(container: Container, project_id: str) -> None:
    c = container
    doc, _ = steps_create(c, project_id, CreateTextDocument(path="/r/stale.md", content=TEXT))
    stale = DocumentRun(project_id=project_id, document_id=doc.id, generation=c.documents.get(project_id, doc.id)
                        .ingest_generation)
    updated = reingest(c.ingestion_ports, _Inline(c), project_id, doc.id,
                       ReingestRequest(chunk_strategy="recursive", chunk_size=300))  # type: ignore[arg-type]
    final = c.documents.get(project_id, doc.id)
    assert final.status.value == "ready" and final.chunk_strategy.value == "recursive"
    assert final.active_generation == updated.ingest_generation and (final.total_chunks or 0) > 1
    # a late step of the superseded run changes nothing
    assert steps.extract(stale, c.ingestion_ports).skip is True
    assert steps.finalize(stale, c.ingestion_ports).skip is True
    assert c.documents.get(project_id, doc.id).active_generation == final.active_generation


def test_same_text_again_is_a_no_op_and_changed_text_replaces_chunks(container: Container, project_id: str) -> None:
    c = container
    doc, started = steps_create(c, project_id, CreateTextDocument(path="/r/same.md", content="alpha beta"))
    again, started_again = steps_create(c, project_id, CreateTextDocument(path="/r/same.md", content="alpha beta"))
    assert started and not started_again and again.id == doc.id
    changed, started_changed = steps_create(c, project_id, CreateTextDocument(path="/r/same.md", content="gamma"))
    assert started_changed and changed.id == doc.id
    assert [r["content"] for r in _rows(c, doc.id)] == ["gamma"]


class _Inline:
    """PipelineStarter that runs synchronously (the local starter's thread, without the thread)."""

    def __init__(self, container: Container) -> None:
        self._runner = fast_runner(container)

    def start(self, payload: dict[str, Any], *, name: str | None = None, size_bytes: int | None = None) -> str:
        self._runner.run(payload)
        return name or "inline"


def steps_create(container: Container, project_id: str, body: CreateTextDocument) -> tuple[Any, bool]:
    from memory_engine.services.ingestion.documents import create_text_document

    return create_text_document(container.ingestion_ports, _Inline(container), project_id, body)


class _NotStarting:
    """A PipelineStarter whose runs never happen: the engine stopped right after the row was written."""

    def start(self, payload: dict[str, Any], *, name: str | None = None, size_bytes: int | None = None) -> str:
        return name or "never"


def test_a_run_interrupted_by_a_stop_is_resumed_at_the_next_start(container: Container, project_id: str) -> None:
    from memory_engine.local.ingestion_slots import LocalPipelineStarter
    from memory_engine.services.ingestion.documents import create_text_document, resume_interrupted

    # Given a document whose run was registered but never ran (the local engine stopped)
    doc, started = create_text_document(container.ingestion_ports, _NotStarting(), project_id,  # type: ignore[arg-type]
                                        CreateTextDocument(path="/resume/a.txt", content="Resumed runs finish."))
    assert started and container.documents.get(project_id, doc.id).status.value == "processing"
    # When the engine starts again and resumes interrupted runs
    starter = LocalPipelineStarter(fast_runner(container))
    try:
        resumed = resume_interrupted(container.ingestion_ports, starter)
        assert [d.id for d in resumed if d.id == doc.id] == [doc.id]
        starter.result(f"{doc.id}-g{doc.ingest_generation}", timeout=60)
    finally:
        starter.shutdown()
    # Then the document ends ready with its chunk, not stuck in processing
    final = container.documents.get(project_id, doc.id)
    assert final.status.value == "ready" and final.indexed_chunks == final.total_chunks == 1
