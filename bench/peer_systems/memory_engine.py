"""memory-engine itself, through its service layer and through its HTTP API."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from peer_systems.base import (
    PATH_PREFIX,
    PROJECT,
    Dataset,
    K,
    Query,
    System,
    log,
)


class MemoryEngineService(System):
    """memory-engine through its service layer: LoCoMo through the write funnel (the harness's
    ``locomo.seed``); SciFact with the harness's bulk insert (``beir.seed``: one ``whole`` chunk per
    abstract, straight into the schema) or, with ``--me-documents api``, through ``create_text_document``
    (the service behind POST /v1/documents: blob, register, extract, chunk, embed, finalize). Search is
    ``search_knowledge`` with a preset and the precomputed ``query_embedding``."""

    key = "memory-engine"
    rows: tuple[str, ...] = ("memory-engine hybrid", "memory-engine vector_only")
    presets = {"memory-engine hybrid": "hybrid", "memory-engine vector_only": "vector_only",
               "memory-engine hybrid (HTTP)": "hybrid"}

    @staticmethod
    def extra_texts(ds: Dataset) -> list[str]:
        # What the write funnel embeds for a turn written with its speaker as subject entity (its
        # transcript line with "About: <anchor>", here without its context, and the entity name).
        # Texts this misses the child embeds itself, and the table marks the row.
        from memory_engine.domain.chunking import normalize_text
        from memory_engine.domain.entities import embedding_text

        if ds.name != "locomo":  # a `whole` chunk is the extracted text, normalized (NFKC, spaces)
            return [normalize_text(u.text) for u in ds.units]
        return [t for u in ds.units for t in (embedding_text(u.text, u.meta["speaker"], speaker=u.meta["speaker"]),
                                          u.meta["speaker"])]

    def setup(self, ds: Dataset) -> None:
        from memory_engine.adapters.postgres.migrations import migrate
        from memory_engine.bootstrap import set_container
        from memory_engine.local.container import LocalContainer
        from memory_engine.ports.embedder import Embedder, EmbeddingKind
        from memory_engine.settings import Settings

        cache = self.cache

        class LookupEmbedder(Embedder):
            dimensions = 384
            model_id = "all-MiniLM-L6-v2-int8"

            def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
                return cache.get(texts)  # type: ignore[return-value]

        settings = Settings().model_copy(update={"database_url": self.db_url, "home": self.home})
        self.container = LocalContainer(settings, embedder=LookupEmbedder())
        migrate(self.db_url, embedding_dim=384)
        set_container(self.container)
        self.project_id = self.container.projects.get_or_create_project(PROJECT).id
        self.scope: dict[str, str] = {}  # conversation -> memory id
        self.labels: dict[str, frozenset[str]] = {}  # entry id -> dia ids
        if ds.name != "locomo" and self.documents == "bulk":
            self.notes.append("load: bulk insert of the evaluation harness (beir.seed), not the ingestion API")

    def load(self, ds: Dataset) -> None:
        if ds.name == "locomo":
            from memory_engine.evaluation import locomo

            for conv in ds.conversations:
                memory_id, labels = locomo.seed(self.container, self.project_id, conv)
                self.scope[conv.sample_id] = memory_id
                self.labels.update(labels)
        elif self.documents == "bulk":
            from memory_engine.evaluation import beir

            beir.seed(self.container, self.project_id, ds.beir)
        else:
            from memory_engine.domain.requests import CreateTextDocument
            from memory_engine.services.ingestion.documents import create_text_document, run_name

            c = self.container
            runs = []
            for doc in ds.beir.corpus.values():
                body = CreateTextDocument(path=doc.path, content=doc.content, title=doc.title, metadata=doc.metadata)
                created, _ = create_text_document(c.ingestion_ports, c.pipeline_starter, self.project_id, body)
                runs.append(run_name(created.id, created.ingest_generation))
            self.wait_for_ingestion(runs, len(ds.units))

    def wait_for_ingestion(self, runs: list[str], expected: int) -> None:
        started = time.perf_counter()
        for done, run in enumerate(runs, start=1):
            self.container.pipeline_starter.result(run, timeout=3600)
            if done % 250 == 0:
                log(f"{done} documents ingested, {time.perf_counter() - started:.1f} s after the last was submitted")
        with self.container.database.connection() as conn:
            row = conn.execute("SELECT count(*) AS n FROM documents WHERE project_id = %s AND status = 'ready'",
                               (self.project_id,)).fetchone()
        ready = row["n"] if row else 0
        if ready != expected:
            raise RuntimeError(f"only {ready} of {expected} documents became ready")

    def request(self, query: Query) -> dict[str, Any]:
        scope: dict[str, Any] = (
            {"memory_ids": [self.scope[query.group]]} if query.group in self.scope else {"document_paths": [PATH_PREFIX]}
        )
        return {"query": query.text, "query_embedding": self.cache.one(query.text).tolist(), "limit": K, **scope}

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        from memory_engine.domain.search_config import PRESETS
        from memory_engine.domain.search_models import SearchRequest
        from memory_engine.services.search_knowledge import search_knowledge

        c = self.container
        response = search_knowledge(c.knowledge_index, c.embedder, project_id=self.project_id,
                                    request=SearchRequest(**self.request(query)), config=PRESETS[self.presets[row]])
        return [self.result_labels(r.model_dump()) for r in response.results]

    def result_labels(self, result: dict[str, Any]) -> frozenset[str]:
        if result.get("source_type") == "document":
            return frozenset({str(result["path"]).removeprefix(PATH_PREFIX)})
        return self.labels.get(str(result["id"]), frozenset())

    def close(self) -> None:
        from memory_engine.bootstrap import set_container

        set_container(None)
        self.container.close()


class MemoryEngineHttp(MemoryEngineService):
    """The same engine through its local HTTP API (the in-process gateway that `memory-engine dev`
    serves, one keep-alive connection, an API key): every write and every search is a request."""

    key = "memory-engine-http"
    rows = ("memory-engine hybrid (HTTP)",)

    def setup(self, ds: Dataset) -> None:
        import http.client

        from memory_engine.domain.auth import Scope
        from memory_engine.local.http_gateway import LocalGateway
        from memory_engine.services.keys import create_api_key

        super().setup(ds)
        self.gateway = LocalGateway("127.0.0.1", 0)
        self.gateway.start()
        minted = create_api_key(self.container.projects, project_name=PROJECT, scopes=frozenset({Scope.READ, Scope.WRITE}),
                                name="bench-peers")
        host, port = self.gateway.base_url.removeprefix("http://").split(":")
        self.http = http.client.HTTPConnection(host, int(port), timeout=120)
        self.headers = {"Authorization": f"Bearer {minted.raw_key}", "Content-Type": "application/json"}

    def call(self, path: str, body: dict[str, Any]) -> Any:
        self.http.request("POST", path, body=json.dumps(body).encode("utf-8"), headers=self.headers)
        response = self.http.getresponse()
        payload = response.read()
        if response.status >= 300:
            raise RuntimeError(f"POST {path}: {response.status} {payload[:300]!r}")
        return json.loads(payload)

    def load(self, ds: Dataset) -> None:
        if ds.name != "locomo" and self.documents == "bulk":
            super().load(ds)  # no bulk route over HTTP: the same bulk insert; only search goes over HTTP
            return
        if ds.name == "locomo":
            from memory_engine.evaluation import locomo

            target = HttpSeedTarget(self.call)  # the harness's own seeding, every write a request
            for conv in ds.conversations:
                memory_id, labels = locomo.seed(target, self.project_id, conv, write=target.write_entry)  # type: ignore[arg-type]
                self.scope[conv.sample_id] = memory_id
                self.labels.update(labels)
        else:
            from memory_engine.services.ingestion.documents import run_name

            runs = []
            for doc in ds.beir.corpus.values():
                created = self.call("/v1/documents", {"path": doc.path, "content": doc.content, "title": doc.title,
                                                      "metadata": doc.metadata})
                runs.append(run_name(created["id"], created["ingest_generation"]))
            self.wait_for_ingestion(runs, len(ds.units))

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        body = self.call("/v1/knowledge/search", self.request(query))
        return [self.result_labels(r) for r in body["results"]]

    def close(self) -> None:
        self.http.close()
        self.gateway.stop()
        super().close()


class HttpSeedTarget:
    """What ``locomo.seed`` needs of a container (``memories.create``; ``entries``, ``embedder`` and
    ``chat_model`` are handed to its ``write``, :meth:`write_entry`, which ignores them), answered by
    the HTTP API: the harness decides the fields, so the HTTP row writes exactly what the service row
    writes, whatever the harness writes next."""

    def __init__(self, call: Callable[[str, dict[str, Any]], Any]) -> None:
        self.call = call
        self.memories = self
        self.entries = self.embedder = self.chat_model = None

    def create(self, project_id: str, *, name: str, tags: Sequence[str] = (), **fields: Any) -> Any:
        from types import SimpleNamespace

        created = self.call("/v1/memories", {"name": name, "tags": list(tags), **fields})
        return SimpleNamespace(id=created["id"])

    def write_entry(self, *_ports: Any, project_id: str, entry: Any, duplicate_threshold: float = 0.95,
                    agent: Any = None) -> Any:
        from types import SimpleNamespace

        body = {**entry.model_dump(mode="json", exclude_unset=True), "duplicate_threshold": duplicate_threshold}
        written = self.call("/v1/memory-entries", body)
        return SimpleNamespace(entry=SimpleNamespace(id=written["id"]), action=written.get("action"))
