"""Search responses of two source trees on ONE seeded database: the exact check that a refactor
changed no result.

``memory-engine eval`` seeds a fresh database each run, and ids are a time plus random bits that
break score ties, so its figures move in the third decimal between two runs of the same code. Here
the first run seeds a persistent database (LoCoMo dev conversations as memories, SciFact abstracts
as documents, a chunk per sentence) and every run answers the same searches on it (every preset,
both sources, filters, the default floor, no-query reads, raw, episodes, render):

    python bench/search_ab.py run --tree /path/to/before --pgdata /tmp/ab/pgdata --out before.json
    python bench/search_ab.py run --tree . --pgdata /tmp/ab/pgdata --out after.json
    python bench/search_ab.py compare before.json after.json

``--tree`` is the source tree whose ``layers/core`` is imported (the seeding too, on the first run).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def seed(container: Any, conversations: list[Any], corpus: list[dict[str, Any]]) -> dict[str, Any]:
    """The project, its memories (one per conversation, through the write funnel) and its documents
    (ready, one chunk per sentence of each abstract)."""
    from memory_engine import ids
    from memory_engine.evaluation import locomo
    from memory_engine.evaluation.beir import analyze

    project_id = container.projects.get_or_create_project("search-ab").id
    memories = [locomo.seed(container, project_id, c)[0] for c in conversations]
    documents = []
    for row in corpus:
        chunks = [s for s in re.split(r"(?<=[.!?])\s+", f"{row.get('title', '')}. {row['text']}".strip()) if s]
        vectors = container.embedder.embed_documents(chunks)
        doc_id = ids.new_id(ids.DOCUMENT)
        with container.database.connection() as conn:
            conn.execute("INSERT INTO documents (id, project_id, path, status, total_chunks, indexed_chunks)"
                         " VALUES (%s, %s, %s, 'ready', %s, %s)", (doc_id, project_id, f"/sci/{row['_id']}.txt",
                                                                    len(chunks), len(chunks)))
            for index, (text, vector) in enumerate(zip(chunks, vectors, strict=True)):
                conn.execute("INSERT INTO document_chunks (id, project_id, document_id, generation, chunk_index,"
                             " content, embedding) VALUES (%s, %s, %s, 0, %s, %s, %s)",
                             (ids.new_id(ids.CHUNK), project_id, doc_id, index, text, vector))
        documents.append(doc_id)
    analyze(container)
    return {"project_id": project_id, "memories": memories, "documents": documents}


def requests(seeded: dict[str, Any], questions: list[str], claims: list[str]) -> dict[str, Any]:
    from memory_engine.domain.search_models import SearchRequest

    mems, docs = seeded["memories"], seeded["documents"]
    out: dict[str, SearchRequest] = {}
    for i, q in enumerate(claims):
        for preset in ("hybrid", "rrf_v1", "keyword_only", "vector_only"):
            out[f"docs/{preset}/{i}"] = SearchRequest(query=q, preset=preset, min_score=0)
        out[f"docs-floor/{i}"] = SearchRequest(query=q)
        out[f"docs-paths/{i}"] = SearchRequest(query=q, document_paths=["/sci/1*", "/sci/2*"], limit=20)
        out[f"docs-ids/{i}"] = SearchRequest(query=q, document_ids=docs[:200], limit=5, min_score=0.05)
    for i, q in enumerate(questions):
        for preset in ("hybrid", "rrf_v1", "keyword_only", "vector_only", "entity_only"):
            out[f"both/{preset}/{i}"] = SearchRequest(query=q, memory_ids=mems, document_ids=docs[:100], preset=preset,
                                                      min_score=0, limit=15)
        out[f"memory/hybrid/{i}"] = SearchRequest(query=q, memory_ids=mems[:1], min_score=0)
        out[f"memory-floor/{i}"] = SearchRequest(query=q, memory_ids=mems[:1])
        out[f"memory-tags/{i}"] = SearchRequest(query=q, memory_tags=["eval:*"], limit=30, include=["raw", "episodes"],
                                                render=True)
        out[f"memory-as-of/{i}"] = SearchRequest(query=q, memory_ids=mems, as_of=datetime(2023, 6, 1, tzinfo=UTC),
                                                 min_confidence=0.7, signals=["keyword", "entity"])
        out[f"memory-deep/{i}"] = SearchRequest(query=q, memory_ids=mems[:1], limit=60, min_score=0)
    out["recent/memories"] = SearchRequest(memory_ids=mems, limit=50)
    out["recent/documents"] = SearchRequest(document_ids=docs[:5], limit=50)
    out["recent/both"] = SearchRequest(memory_tags=["eval:locomo"], document_paths=["/sci/4*"], limit=80, include=["raw"])
    return out


def run(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(args.tree.resolve() / "layers" / "core"))
    from memory_engine.adapters.postgres.migrations import migrate
    from memory_engine.bootstrap import Container, set_container
    from memory_engine.evaluation import locomo
    from memory_engine.evaluation.embedding_cache import DiskCachedEmbedder
    from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
    from memory_engine.services.search_knowledge import search_knowledge
    from memory_engine.settings import Settings

    print(f"memory_engine from {sys.modules['memory_engine'].__file__}", file=sys.stderr)
    server = EmbeddedPostgres(args.pgdata)
    server.start()
    url = server.uri("postgres")
    settings = Settings()
    container = Container(settings.model_copy(update={"database_url": url}))
    try:
        container.__dict__["embedder"] = DiskCachedEmbedder(container.embedder, settings.home / "eval-cache")
        set_container(container)
        conversations = locomo.load(args.locomo, max_conversations=args.conversations)
        corpus = [json.loads(line) for line in (args.scifact / "corpus.jsonl").open()][: args.abstracts]
        state = args.pgdata.parent / (args.pgdata.name + ".seeded.json")
        if not state.exists():
            migrate(url, embedding_dim=container.embedder.dimensions)
            state.write_text(json.dumps(seed(container, conversations, corpus)))
        seeded = json.loads(state.read_text())
        questions = [q.text for c in conversations for q in c.questions if q.evidence][: args.queries]
        claims = [json.loads(line)["text"] for line in (args.scifact / "queries.jsonl").open()][: args.queries]
        started = time.perf_counter()
        answers = {name: search_knowledge(container.knowledge_index, container.embedder, project_id=seeded["project_id"],
                                          request=request).model_dump(mode="json")
                   for name, request in requests(seeded, questions, claims).items()}
        print(f"{len(answers)} searches in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        args.out.write_text(json.dumps(answers, sort_keys=True))
    finally:
        set_container(None)
        container.close()
        server.stop()
    return 0


def compare(args: argparse.Namespace) -> int:
    before, after = json.loads(args.before.read_text()), json.loads(args.after.read_text())
    differ = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    rows = sum(len(answer["results"]) for answer in before.values())
    print(f"{len(before)} searches ({rows} results) before, {len(after)} after; {len(differ)} differ")
    for name in differ[:20]:
        print(f"  {name}")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    runs = sub.add_parser("run", help="answer the searches with one tree, seeding the database on the first run")
    runs.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    runs.add_argument("--pgdata", type=Path, required=True)
    runs.add_argument("--out", type=Path, required=True)
    runs.add_argument("--locomo", type=Path, default=DATA / "locomo" / "locomo_dev5.json")
    runs.add_argument("--scifact", type=Path, default=DATA / "scifact")
    runs.add_argument("--conversations", type=int, default=2)
    runs.add_argument("--abstracts", type=int, default=500)
    runs.add_argument("--queries", type=int, default=120, help="LoCoMo questions and SciFact claims, each")
    runs.set_defaults(func=run)
    comparing = sub.add_parser("compare", help="exit 1 when any response differs")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    comparing.set_defaults(func=compare)
    args = parser.parse_args()
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
