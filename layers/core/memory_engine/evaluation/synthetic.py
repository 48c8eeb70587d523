"""Synthetic-but-realistic corpora for latency benchmarks and plan tests: real sentences (from a
BEIR corpus when given, else a built-in sample), random unit vectors, entities drawn from the
text's own frequent words. Rows are bulk-loaded with COPY."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z][a-z-]{3,}")
_STOP = frozenset(
    "that this with from were have been which their there these those than into also such only more most other"
    " about after before between during through under while where when what whom whose will would could should"
    " using used both each however including within without among".split()
)
FALLBACK = [
    "Insulin resistance is associated with increased risk of type 2 diabetes in adults.",
    "The tumor suppressor gene p53 regulates apoptosis after DNA damage.",
    "Vitamin D supplementation did not reduce fracture rates in elderly women.",
    "Macrophages drive chronic inflammation in atherosclerotic plaques.",
    "Statin therapy lowers LDL cholesterol and cardiovascular mortality.",
    "Gut microbiota composition changes with diet and antibiotic exposure.",
]


def sentences(corpus: Path | None, *, limit: int = 200_000) -> list[str]:
    """Sentences of 30..400 characters from ``corpus.jsonl`` (BEIR layout), or the fallback."""
    if corpus is None or not corpus.exists():
        return FALLBACK
    out: list[str] = []
    for line in corpus.open(encoding="utf-8"):
        for sentence in _SENTENCE.split(json.loads(line).get("text") or ""):
            if 30 <= len(sentence) <= 400:
                out.append(sentence.strip())
                if len(out) >= limit:
                    return out
    return out or FALLBACK


def entity_names(texts: list[str], count: int) -> list[str]:
    words: Counter[str] = Counter()
    for text in texts[:50_000]:
        words.update(w for w in _WORD.findall(text.lower()) if w not in _STOP)
    return [w for w, _ in words.most_common(count)]


def unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.5f}" for x in vector) + "]"


def _batches(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(size, total - start)


def load_facts(
    database: Database, project_id: str, memory_id: str, texts: list[str], n: int, *, dim: int, seed: int = 7,
    entities: int = 2_000,
) -> None:
    """``n`` live facts in one memory (cycling through ``texts``), each linked to up to three of
    the ``entities`` most frequent words it contains."""
    rng = np.random.default_rng(seed)
    names = entity_names(texts, entities)
    with database.connection() as conn:
        existing = {r["name"]: r["id"] for r in conn.execute(
            "SELECT name, id FROM entities WHERE project_id = %s", (project_id,)).fetchall()}
        new = [(ids.new_id(ids.ENTITY), name) for name in names if name not in existing]
        vectors = unit_vectors(rng, len(new), dim)
        with conn.cursor() as cur, cur.copy(
            "COPY entities (id, project_id, name, display_name, embedding) FROM STDIN") as copy:
            for (entity_id, name), vector in zip(new, vectors, strict=True):
                copy.write_row((entity_id, project_id, name, name, _vector_text(vector)))
        existing.update({name: entity_id for entity_id, name in new})
        wanted = set(names)
        offset = conn.execute("SELECT count(*) AS n FROM memory_entries WHERE memory_id = %s", (memory_id,)).fetchone()
        base = int(offset["n"]) if offset else 0
        for start, size in _batches(n, 5_000):
            vectors = unit_vectors(rng, size, dim)
            links: list[tuple[str, str, str, str]] = []
            with conn.cursor() as cur, cur.copy(
                "COPY memory_entries (id, project_id, memory_id, content, embedding) FROM STDIN") as copy:
                for i in range(size):
                    text = texts[(base + start + i) % len(texts)]
                    entry_id = ids.new_id(ids.ENTRY)
                    copy.write_row((entry_id, project_id, memory_id, text, _vector_text(vectors[i])))
                    found = list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if w in wanted))[:3]
                    links.extend((entry_id, existing[w], "subject" if j == 0 else "mention", memory_id)
                                 for j, w in enumerate(found))
            with conn.cursor() as cur, cur.copy("COPY entry_entities (entry_id, entity_id, role, memory_id) FROM STDIN") as copy:
                for row in links:
                    copy.write_row(row)


def load_chunks(database: Database, project_id: str, texts: list[str], n: int, *, dim: int, seed: int = 11) -> None:
    """``n`` ready one-chunk documents."""
    rng = np.random.default_rng(seed)
    with database.connection() as conn:
        for start, size in _batches(n, 5_000):
            vectors = unit_vectors(rng, size, dim)
            doc_ids = [ids.new_id(ids.DOCUMENT) for _ in range(size)]
            with conn.cursor() as cur, cur.copy(
                "COPY documents (id, project_id, path, chunk_strategy, status, total_chunks, indexed_chunks)"
                " FROM STDIN") as copy:
                for doc_id in doc_ids:
                    copy.write_row((doc_id, project_id, f"/bench/{doc_id}", "whole", "ready", 1, 1))
            with conn.cursor() as cur, cur.copy(
                "COPY document_chunks (id, project_id, document_id, chunk_index, content, embedding) FROM STDIN") as copy:
                for i, doc_id in enumerate(doc_ids):
                    text = texts[(start + i * 7) % len(texts)]
                    copy.write_row((ids.new_id(ids.CHUNK), project_id, doc_id, 0, text, _vector_text(vectors[i])))


SEEDED_TABLES = ("memory_entries", "entities", "entry_entities", "documents", "document_chunks")


def analyze(database: Database) -> None:
    with database.connection() as conn:
        for table in SEEDED_TABLES:
            conn.execute(f"ANALYZE {table}")


def settle(conninfo: str) -> None:
    """Bring a bulk-loaded database to the state a long-running one is in before it is timed:
    ``VACUUM (ANALYZE)`` sets the rows' hint bits and the visibility map (else the first reads of
    every freshly copied row write it back) and the planner statistics, then ``CHECKPOINT`` writes
    the load's dirty pages (else the checkpointer flushes gigabytes while the queries run)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for table in SEEDED_TABLES:
            conn.execute(f"VACUUM (ANALYZE) {table}")
        conn.execute("CHECKPOINT")


def random_query_vector(seed: int, dim: int) -> Any:
    return unit_vectors(np.random.default_rng(seed), 1, dim)[0]


class VectorIndexesDeferred:
    """Drop the HNSW indexes of the bulk-loaded tables and rebuild them from their own
    definitions (``pg_indexes.indexdef``) on exit: a bulk build is far faster than row-by-row
    inserts, and the rebuilt indexes are exactly the migration's."""

    TABLES = ("memory_entries", "document_chunks", "entities")

    def __init__(self, database: Database) -> None:
        self._database = database
        self._definitions: list[str] = []

    def __enter__(self) -> VectorIndexesDeferred:
        with self._database.connection() as conn:
            rows = conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
                " AND tablename = ANY(%s) AND indexdef ILIKE '%%USING hnsw%%'",
                (list(self.TABLES),),
            ).fetchall()
            for row in rows:
                conn.execute(f'DROP INDEX "{row["indexname"]}"')
                self._definitions.append(row["indexdef"])
        return self

    def __exit__(self, *exc: object) -> None:
        with self._database.connection() as conn:
            # a 1M-vector HNSW graph needs ~2 GB; a build that outgrows this memory slows down badly
            conn.execute("SET maintenance_work_mem = '3GB'")
            for definition in self._definitions:
                conn.execute(definition)


#: One walk over each bulk-loaded HNSW graph: (table, the filter its index needs).
_GRAPHS = (("memory_entries", "invalidated_at IS NULL"), ("document_chunks", "TRUE"))


def warm_vector_indexes(conninfo: str, dim: int) -> float:
    """Read every page of the HNSW indexes once, as a server that has been answering queries for a
    while has them in memory (no pg_prewarm here): an iterative scan with no row limit walks the
    whole graph. Without it, a large index is timed cold: random query vectors land in a different
    part of the graph each time, so the first few hundred queries at 1M rows read most of its
    pages for the first time. Returns the seconds it took."""
    started = time.perf_counter()
    with psycopg.connect(conninfo) as conn:
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET work_mem = '1GB'")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET hnsw.max_scan_tuples = 2147483647")
        probe = _vector_text(random_query_vector(0, dim))
        for table, where in _GRAPHS:
            conn.execute(
                f"SELECT count(*) FROM (SELECT id FROM {table} WHERE {where}"  # noqa: S608 - fixed table names
                " ORDER BY embedding <=> %s::vector LIMIT 100000000) walked", (probe,))
    return time.perf_counter() - started
