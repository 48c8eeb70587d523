"""Faults: the embedding provider down, the chat model down, a pipeline step failing mid-document.

Everything goes through the HTTP handlers with the real database and the real offline model; the
faults are injected by fakes that subclass the ports (a switchable embedder around the real one,
a scripted chat model). Each test says what the engine must keep: no 5xx for a write, no lost turn,
no document stuck in ``processing``, and a way back (``reembed``, redelivery, re-ingest).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import psycopg
import pytest

from memory_engine.adapters.postgres.embedding_repair import PostgresEmbeddingRepair
from memory_engine.bootstrap import Container
from memory_engine.errors import ChatModelError, EmbeddingError
from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder
from memory_engine.ports.chat import ChatModel
from memory_engine.ports.embedder import Embedder, EmbeddingKind
from memory_engine.services.reembed import reembed_missing
from tests.support.api_client import ApiClient
from tests.support.extraction import ScriptedChatModel, turn_event


class SwitchableEmbedder(Embedder):
    """The real model, until ``down`` (every call fails) or ``fail_after`` more successful calls."""

    def __init__(self, real: OnnxMiniLMEmbedder) -> None:
        super().__init__(query_cache_size=0)
        self.real, self.dimensions, self.model_id, self.batch_size = real, real.dimensions, real.model_id, 4
        self.down = False
        self.fail_after: int | None = None

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        if self.fail_after is not None:
            if self.fail_after <= 0:
                raise EmbeddingError("embedding model unavailable (fault injected mid-document)")
            self.fail_after -= 1
        if self.down:
            raise EmbeddingError("embedding model unavailable (fault injected)")
        return self.real._embed_batch(texts, kind)


@pytest.fixture(scope="module")
def switchable(embedder: OnnxMiniLMEmbedder) -> SwitchableEmbedder:
    return SwitchableEmbedder(embedder)


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    return ScriptedChatModel()


@pytest.fixture(scope="module")
def container(
    database_url: str, switchable: SwitchableEmbedder, chat_model: ChatModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Container]:
    """The shared container shape, with the switchable embedder and fast retries (same policies)."""
    from memory_engine.bootstrap import set_container
    from memory_engine.local.container import LocalContainer
    from memory_engine.local.pipeline import PipelineRunner, invoke_ingestion_handler, invoke_streamed_producer
    from memory_engine.settings import Settings

    settings = Settings(DATABASE_URL=database_url, MEMORY_ENGINE_HOME=str(tmp_path_factory.mktemp("home")))  # type: ignore[call-arg]
    built = LocalContainer(settings, embedder=switchable, chat_model=chat_model)
    built.__dict__["pipeline_runner"] = PipelineRunner(invoke=invoke_ingestion_handler, stream=invoke_streamed_producer,
                                                       retry_delay_scale=0.0)
    built.event_queue.retry_delay = 0.05
    set_container(built)
    yield built
    set_container(None)
    built.event_queue.stop()
    built.close()


@pytest.fixture(autouse=True)
def _model_up(switchable: SwitchableEmbedder) -> Iterator[None]:
    switchable.down, switchable.fail_after = False, None
    yield
    switchable.down, switchable.fail_after = False, None


def _missing_vectors(database_url: str, table: str, project_id: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table} WHERE embedding IS NULL AND project_id = %s", (project_id,))
        return int(row.fetchone()[0])  # type: ignore[index]


def test_embedding_provider_down_writes_are_kept_search_degrades_and_reembed_repairs(
    api: ApiClient, container: Container, switchable: SwitchableEmbedder, database_url: str
) -> None:
    project_id = container.projects.get_or_create_project("acme").id
    memory = api.post("/v1/memories", {"name": "outage"}).json
    # Given the embedding provider is down
    switchable.down = True
    # When facts are written, they are stored (201) without a vector
    for content, entity in [("Priya maintains the billing service.", "Priya"), ("The billing service runs on Kafka.", None)]:
        written = api.post("/v1/memory-entries", {"memory_id": memory["id"], "content": content,
                                                  "entities": [{"name": entity}] if entity else []})
        assert written.status == 201, written.json
    assert _missing_vectors(database_url, "memory_entries", project_id) == 2
    # And search answers 200 from keyword + entity, saying which signal it lost
    found = api.post("/v1/knowledge/search", {"query": "who maintains billing? Priya", "memory_ids": [memory["id"]]})
    assert found.status == 200, found.json
    assert found.json["degraded"] and any("vector" in d or "embedding" in d for d in found.json["degraded"])
    assert {r["content"] for r in found.json["results"]} >= {"Priya maintains the billing service."}
    assert all(r["signal_ranks"].get("vector") is None for r in found.json["results"])
    # And the embeddings endpoint answers a clean, documented 503 (a dependency, not a bug)
    vectors = api.post("/v1/embeddings", {"input": "hello"})
    assert vectors.status == 503 and vectors.json["error"]["code"] == "embedding_error"
    # When the provider is back and `reembed` runs
    switchable.down = False
    repaired = reembed_missing(PostgresEmbeddingRepair(container.database), switchable)
    # Then every vector is there and search is whole again
    assert repaired["memory_entries"] >= 2 and _missing_vectors(database_url, "memory_entries", project_id) == 0
    assert _missing_vectors(database_url, "entities", project_id) == 0
    # (the whole ranking: this is about the vector list coming back, not about the relevance floor)
    whole = api.post("/v1/knowledge/search", {"query": "who keeps the invoicing system running", "memory_ids": [memory["id"]],
                                              "min_score": 0})
    assert "degraded" not in whole.json
    assert len(whole.json["results"]) == 2 and all(r["signal_ranks"].get("vector") for r in whole.json["results"])


def test_chat_model_down_fails_the_run_with_the_reason_and_keeps_the_turn(
    api: ApiClient, container: Container, chat_model: ScriptedChatModel
) -> None:
    project_id = container.projects.get_or_create_project("acme").id
    memory = api.post("/v1/memories", {"name": "chat-outage"}).json
    # Given the chat model is down for every attempt
    chat_model.script(*[ChatModelError("connection refused (fault injected)")] * 5)
    event = turn_event(project_id=project_id, memory_id=memory["id"], conversation_id="conv-outage",
                       messages=[{"role": "user", "content": "My sister Maren moved to Bergen last spring."}])
    # When the turn.completed event is delivered
    response = api.post("/v1/events", event, params={"wait": "true"})
    # Then the producer got its answer, the delivery ended in the dead letters after the retries,
    assert response.status == 200, response.json
    assert response.json["status"] == "dead_lettered"
    letters = [d for d in container.dead_letters.letters if event["id"] in d.body]
    assert letters and letters[-1].attempts == container.event_queue.max_attempts
    # the run is failed with the model's reason, and no fact was half-written
    run = response.json["run"]
    assert run["status"] == "failed" and "chat model failed" in run["error"] and "connection refused" in run["error"]
    assert api.get("/v1/memory-entries", params={"memory_id": memory["id"]}).json["data"] == []
    # and the turn itself is kept: stored once as an episode, searchable
    episodes = container.episodes.list_for_conversation(project_id, "conv-outage")
    assert len(episodes) == 1 and "Maren moved to Bergen" in episodes[0].transcript
    found = api.post("/v1/knowledge/search", {"query": "where did Maren move", "memory_ids": [memory["id"]],
                                              "include": ["episodes"]}).json
    assert any("Bergen" in e["transcript"] for e in found["episodes"])
    # When the model is back and the same event is redelivered, the run completes (no duplicate episode)
    chat_model.script('[{"content": "Maren moved to Bergen.", "subject": "Maren", "predicate": "moved to", '
                      '"object": "Bergen", "confidence": 0.9}]')
    again = api.post("/v1/events", event, params={"wait": "true"})
    assert again.json["status"] == "succeeded" and again.json["run"]["status"] == "completed", again.json
    assert [e["content"] for e in api.get("/v1/memory-entries", params={"memory_id": memory["id"]}).json["data"]] == [
        "Maren moved to Bergen."]
    assert len(container.episodes.list_for_conversation(project_id, "conv-outage")) == 1


def test_a_step_failing_mid_document_leaves_it_failed_with_the_reason_and_a_retry_completes_it(
    api: ApiClient, switchable: SwitchableEmbedder, database_url: str
) -> None:
    text = "\n\n".join(f"Section {i}. The harbour crane number {i} lifts {i * 3} tonnes on the night shift." for i in range(40))
    # Given the embedding model fails after a few batches of this document's chunks
    switchable.fail_after = 2
    created = api.post("/v1/documents", {"path": "/faults/cranes.md", "content": text, "chunk_strategy": "size",
                                         "chunk_size": 200, "chunk_overlap": 0, "wait": True})
    # Then the document ends `failed` (not `processing`) with the reason, partly indexed
    assert created.status == 201, created.json
    status = api.get(f"/v1/documents/{created.json['id']}/status").json
    assert status["status"] == "failed", status
    assert "embedding model" in status["error"] and "/ingest" in status["error"]
    assert status["total_chunks"] and status["total_chunks"] > 8
    # When the model is back and the document is re-ingested
    switchable.fail_after = None
    retried = api.post(f"/v1/documents/{created.json['id']}/ingest", {"wait": True})
    # Then it is ready with every chunk indexed exactly once, and searchable
    assert retried.status == 200 and retried.json["status"] == "ready", retried.json
    final = api.get(f"/v1/documents/{created.json['id']}/status").json
    assert final["indexed_chunks"] == final["total_chunks"] and final["progress"] == 1.0 and final["error"] is None
    with psycopg.connect(database_url) as conn:
        chunks = conn.execute("SELECT count(*), count(DISTINCT chunk_index), count(embedding) FROM document_chunks "
                              "WHERE document_id = %s", (created.json["id"],)).fetchone()
    assert chunks == (final["total_chunks"], final["total_chunks"], final["total_chunks"])
    hits = api.post("/v1/knowledge/search", {"query": "crane number 37", "document_ids": [created.json["id"]]}).json
    assert hits["results"] and "crane number 37" in hits["results"][0]["content"]
