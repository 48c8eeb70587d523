"""What a conversation turn's vector should read: vector-only recall@10 of the stored entry vectors
against the same turns embedded under other recipes, on LoCoMo dev5 and the BEAM dev set.

    python bench/context_vectors.py --pgdata /tmp/ctx/pgdata [--beam beam-100K-1,beam-500K-1] [--no-locomo]

A turn written with ``source_conversation_id`` is embedded today with the turn before it as its
context (``domain/entities.embedding_text``: the context in the room the turn leaves in the model's
window, then the turn's transcript line ``<speaker>: <text>`` and its ``About: <anchor>``, the first
of its entities); since migration 0011 a turn whose context was cut to fit also keeps the vector of
its own text, and search reads the better cosine of the two. The recipes, each scored on its own:

- ``stored``: the ``embedding`` the write funnel stored (the vector signal's only one before 0011);
- ``context``: ``embedding_text`` with the previous turn, recomputed here (checks the recipe: it
  should read as ``stored``);
- ``own``: the turn's text alone, what a turn's second vector reads (``entities.own_text``);
- ``own+anchor``: the turn's text and its ``About: <anchor>``, without context or speaker;
- ``max(own, context)``: each turn's better cosine of the two, what the vector signal reads where
  a turn keeps both;
- ``max(own+anchor, context)``, ``mean(own+anchor, context)``: the alternatives measured.

The first run seeds ``--pgdata`` (kept for the next runs) as the evaluation harness does
(``locomo.seed``, ``beam.seed``: the write funnel, the batch path for BEAM); a memory already
there (by its name) is reused, its labels read back from the entries' metadata. Vectors come from
the evaluation's embedding cache (``$MEMORY_ENGINE_HOME/eval-cache``; a miss runs the local model).
Each question is ranked over its own conversation's live entries by cosine in numpy (exact, the
whole memory), recall@10 against its evidence as the harness counts it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PROJECT = "context-vectors"
#: name -> how a turn is embedded from (content, anchor, previous turn, speaker); None: the stored vector
Recipe = Callable[[str, "str | None", "str | None", "str | None"], str] | None


def recipes() -> dict[str, Recipe]:
    from memory_engine.domain.entities import embedding_text, own_text

    return {
        "stored": None,
        "context": lambda content, anchor, previous, speaker: embedding_text(content, anchor, context=previous,
                                                                             speaker=speaker),
        # a turn with nothing before it keeps one vector: its own is that one
        "own": lambda content, anchor, previous, speaker: own_text(content, anchor, context=previous, speaker=speaker)
        or embedding_text(content, anchor, speaker=speaker),
        "own+anchor": lambda content, anchor, previous, speaker: embedding_text(content, anchor),
    }


def memory_of(container: Any, project_id: str, name: str, seed: Callable[[], tuple[str, Any]],
              label_key: str) -> tuple[str, dict[str, frozenset[str]]]:
    """The memory called ``name`` (seeded by ``seed`` when absent) and its entry id -> labels."""
    with container.database.connection() as conn:
        row = conn.execute("SELECT id FROM memories WHERE project_id = %s AND name = %s", (project_id, name)).fetchone()
    if row is None:
        memory_id, labels = seed()
        return memory_id, dict(labels)
    with container.database.connection() as conn:
        rows = conn.execute("SELECT id, metadata ->> %s AS label FROM memory_entries WHERE memory_id = %s",
                            (label_key, row["id"])).fetchall()
    return row["id"], {r["id"]: frozenset({r["label"]}) for r in rows if r["label"] is not None}


def turns(container: Any, memory_id: str) -> list[dict[str, Any]]:
    """The memory's live entries in write order, each with its anchor (its first entity, as the
    embedding repair reads it), its speaker (``turn_speaker``) and the previous turn of its
    conversation as the funnel gives it (``turn_text``)."""
    from memory_engine.adapters.postgres.entry_sql import role_rank
    from memory_engine.domain.entries import turn_speaker, turn_text

    anchor = (f"(SELECT n.display_name FROM entry_entities l JOIN entities n ON n.id = l.entity_id"
              f" WHERE l.entry_id = e.id ORDER BY {role_rank('l.role')}, n.name LIMIT 1) AS anchor")
    with container.database.connection() as conn:
        rows = conn.execute(
            f"SELECT e.id, e.content, e.subject, e.source_type, {anchor}, e.source_conversation_id AS conversation,"
            " e.embedding::text AS vector FROM memory_entries e"
            " WHERE e.memory_id = %s AND e.invalidated_at IS NULL ORDER BY e.created_at, e.id",
            (memory_id,)).fetchall()
    last: dict[str | None, str] = {}
    out = []
    for row in rows:
        out.append({**row, "previous": last.get(row["conversation"]) if row["conversation"] else None,
                    "speaker": turn_speaker(row["subject"], row["conversation"], row["source_type"])})
        last[row["conversation"]] = turn_text(row["subject"], row["content"])
    return out


def unit(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


def score(container: Any, memory_id: str, labels: dict[str, frozenset[str]],
          questions: list[tuple[str, frozenset[str]]], into: dict[str, list[float]]) -> None:
    from memory_engine.evaluation.metrics import recall_at_k

    rows = turns(container, memory_id)
    vectors = {}
    for name, recipe in recipes().items():
        if recipe is None:
            vectors[name] = unit([json.loads(r["vector"]) for r in rows])
        else:
            vectors[name] = unit(container.embedder.embed_documents(
                [recipe(r["content"], r["anchor"], r["previous"], r["speaker"]) for r in rows]))
    for text, evidence in questions:
        query = unit([container.embedder.embed_query(text)])[0]
        cosines = {name: v @ query for name, v in vectors.items()}
        cosines["max(own, context)"] = np.maximum(cosines["own"], cosines["context"])
        cosines["max(own+anchor, context)"] = np.maximum(cosines["own+anchor"], cosines["context"])
        cosines["mean(own+anchor, context)"] = (cosines["own+anchor"] + cosines["context"]) / 2
        for name, cosine in cosines.items():
            top = np.argsort(-cosine, kind="stable")[:10]
            into[name].append(recall_at_k([labels.get(rows[i]["id"], frozenset()) for i in top], evidence, 10))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pgdata", type=Path, required=True, help="embedded PostgreSQL data directory (kept)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--beam", default="", help="BEAM conversations by id (default: all of the dev set)")
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--no-beam", action="store_true")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--project", default=PROJECT, help="the project the memories are seeded in (and found again)")
    args = parser.parse_args(argv)

    from memory_engine.cli.eval import eval_container
    from memory_engine.evaluation import beam, locomo
    from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres

    started = time.perf_counter()
    server = EmbeddedPostgres(args.pgdata)
    server.start()
    results: dict[str, dict[str, list[float]]] = {}
    try:
        with eval_container(server.uri("postgres"), args.cache_dir) as container:
            project_id = container.projects.get_or_create_project(args.project).id
            if not args.no_locomo:
                into = results.setdefault("LoCoMo dev5", defaultdict(list))
                for conv in locomo.load(args.data / "locomo" / "locomo_dev5.json"):
                    memory_id, labels = memory_of(container, project_id, f"locomo {conv.sample_id}",
                                                  lambda c=conv: locomo.seed(container, project_id, c), "dia_id")
                    score(container, memory_id, labels, [(q.text, q.evidence) for q in conv.questions if q.evidence], into)
            if not args.no_beam:
                wanted = {name for name in args.beam.split(",") if name}
                for conv in beam.load(args.data / "beam"):
                    if wanted and conv.id not in wanted:
                        continue
                    memory_id, labels = memory_of(container, project_id, f"beam {conv.id}",
                                                  lambda c=conv: beam.seed(container, project_id, c), "message_id")
                    into = results.setdefault(f"BEAM {conv.id.split('-')[1]}", defaultdict(list))
                    score(container, memory_id, labels, [(q.text, q.evidence) for q in conv.questions
                                                         if q.evidence and q.category != beam.NEGATIVE], into)
                    print(f"{conv.id}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    finally:
        server.stop()
    names = list(next(iter(results.values()), {}))
    print("| data | questions | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for data, by in results.items():
        print(f"| {data} | {len(by[names[0]])} | " + " | ".join(f"{np.mean(by[n]):.3f}" for n in names) + " |")
    print(f"took {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
