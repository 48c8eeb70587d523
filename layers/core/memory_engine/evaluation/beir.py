"""BEIR SciFact: the corpus as ``whole`` documents, ``qrels/<split>.tsv`` as judgements."""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_engine.bootstrap import Container
from memory_engine.domain.search_config import PRESETS, SearchConfig
from memory_engine.domain.search_models import SearchRequest
from memory_engine.evaluation import plain_bm25
from memory_engine.evaluation.documents import DocumentText, insert_whole_documents
from memory_engine.evaluation.metrics import MetricTable, ndcg_at_k, recall_at_k, reciprocal_rank
from memory_engine.services.search_knowledge import search_knowledge

logger = logging.getLogger(__name__)

ROWS = ("vector_only", "keyword_only", "hybrid", "rrf_v1")
PATH_PREFIX = "/beir/"


@dataclass(frozen=True)
class BeirData:
    corpus: dict[str, DocumentText]
    queries: dict[str, str]
    qrels: dict[str, dict[str, float]]


def load(root: Path, *, split: str = "train", max_queries: int | None = None, max_docs: int | None = None) -> BeirData:
    """Read corpus/queries/qrels. With ``max_docs``, keep every judged document of the kept
    queries and fill up to ``max_docs`` with the first other documents (a small but fair pool)."""
    qrels: dict[str, dict[str, float]] = {}
    with (root / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if float(row["score"]) > 0:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = float(row["score"])
    queries = {}
    for line in (root / "queries.jsonl").open(encoding="utf-8"):
        item = json.loads(line)
        if item["_id"] in qrels:
            queries[item["_id"]] = item["text"]
    keep = list(queries)[:max_queries]
    queries = {q: queries[q] for q in keep}
    qrels = {q: qrels[q] for q in keep}
    judged = {doc for rel in qrels.values() for doc in rel}
    corpus: dict[str, DocumentText] = {}
    for line in (root / "corpus.jsonl").open(encoding="utf-8"):
        item = json.loads(line)
        doc_id = str(item["_id"])
        title = str(item.get("title") or "").strip()
        text = str(item.get("text") or "").strip()
        content = f"{title}. {text}" if title else text
        corpus[doc_id] = DocumentText(path=PATH_PREFIX + doc_id, content=content, title=title or None,
                                      metadata={"beir_id": doc_id})
    if max_docs is not None:  # every judged document of the kept queries, then the first others
        chosen = [d for d in corpus if d in judged]
        chosen += [d for d in corpus if d not in judged][: max(0, max_docs - len(chosen))]
        corpus = {d: corpus[d] for d in chosen}
    return BeirData(corpus, queries, qrels)


def seed(container: Container, project_id: str, data: BeirData) -> None:
    docs = list(data.corpus.values())
    vectors = container.embedder.embed_documents([d.content for d in docs])
    insert_whole_documents(container.database, project_id, docs, vectors)
    analyze(container)


def analyze(container: Container) -> None:
    """Refresh planner statistics (autovacuum would, a little later): the keyword signal reads
    lexeme frequencies from them."""
    with container.database.connection() as conn:
        for table in ("memory_entries", "document_chunks", "entities", "entry_entities", "episodes", "episode_windows"):
            conn.execute(f"ANALYZE {table}")


def evaluate(
    container: Container, data: BeirData, *, rows: Sequence[str] = ROWS,
    configs: dict[str, SearchConfig] | None = None, project: str = "eval-beir", plain: bool = False,
) -> MetricTable:
    """Seed the corpus, run every query under every config; nDCG@10, recall@10, MRR of the ranking
    (``min_score: 0``: what the default relevance floor costs is in ``memory-engine eval negatives``).
    With ``plain``, a row of a plain BM25 index over the same texts (:mod:`plain_bm25`)."""
    configs = configs or PRESETS
    project_id = container.projects.get_or_create_project(project).id
    seed(container, project_id, data)
    table = MetricTable(("nDCG@10", "R@10", "MRR"))
    for row in rows:
        for query_id, text in data.queries.items():
            request = SearchRequest(query=text, document_paths=[PATH_PREFIX], limit=10, min_score=0)  # the ranking
            response = search_knowledge(container.knowledge_index, container.embedder, project_id=project_id,
                                        request=request, config=configs[row])
            _add(table, row, data.qrels[query_id],
                 [frozenset({r.path.removeprefix(PATH_PREFIX)}) for r in response.results if hasattr(r, "path")])
    if plain:
        top = plain_bm25.index(list(data.corpus), [d.content for d in data.corpus.values()])
        for query_id, text in data.queries.items():
            _add(table, plain_bm25.ROW, data.qrels[query_id], [frozenset({doc}) for doc in top(text, 10)])
    return table


def _add(table: MetricTable, row: str, gains: dict[str, float], ranked: list[frozenset[str]]) -> None:
    relevant = frozenset(gains)
    table.add(row, ("overall",), **{
        "nDCG@10": ndcg_at_k(ranked, gains, 10),
        "R@10": recall_at_k(ranked, relevant, 10),
        "MRR": reciprocal_rank(ranked, relevant),
    })


def negatives(container: Container, data: BeirData, *, project: str = "eval-negatives-beir") -> list[Any]:
    """The judged queries in two halves, each half's judged abstracts in a slice of their own
    (``/neg/a/``, ``/neg/b/``) with the other abstracts shared out between the two; each query
    searched in its half's slice (a positive) and in the other (a negative). A query one of whose
    abstracts is judged for the other half too is left out."""
    from memory_engine.evaluation.scored import rows_of

    ids = list(data.queries)
    halves = (ids[: len(ids) // 2], ids[len(ids) // 2:])
    judged = [{doc for q in half for doc in data.qrels[q]} for half in halves]
    others = [doc for doc in data.corpus if doc not in judged[0] | judged[1]]
    slices = [judged[0] | set(others[0::2]), judged[1] | set(others[1::2])]
    docs = [
        DocumentText(path=f"/neg/{name}/{doc}", content=data.corpus[doc].content, title=data.corpus[doc].title,
                     metadata={"beir_id": doc})
        for name, chosen in zip("ab", slices, strict=True) for doc in sorted(chosen) if doc in data.corpus
    ]
    project_id = container.projects.get_or_create_project(project).id
    doc_ids = insert_whole_documents(container.database, project_id, docs,
                                     container.embedder.embed_documents([d.content for d in docs]))
    analyze(container)
    beir_of = {doc_id: d.path.rsplit("/", 1)[1] for doc_id, d in zip(doc_ids, docs, strict=True)}
    with container.database.connection() as conn:
        rows = conn.execute("SELECT id, document_id FROM document_chunks WHERE document_id = ANY(%s)", (doc_ids,)).fetchall()
    labels = {row["id"]: frozenset({beir_of[row["document_id"]]}) for row in rows}
    out = []
    for own, half in enumerate(halves):
        for query_id in half:
            relevant = frozenset(data.qrels[query_id])
            if relevant & slices[1 - own]:
                continue
            for prefix, rel in (("ab"[own], relevant), ("ab"[1 - own], frozenset[str]())):
                request = SearchRequest(query=data.queries[query_id], document_paths=[f"/neg/{prefix}/"], limit=10)
                out.append(rows_of(container, project_id, request, labels, rel, "scifact"))
    return out
