"""`memory-engine eval locomo|beir|negatives`: retrieval quality on real data, presets side by side.

Runs in a throwaway embedded PostgreSQL (or ``--database-url``), with document/query vectors
cached under ``$MEMORY_ENGINE_HOME/eval-cache`` so reruns skip the model.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path("../shared/data")


def register(sub: Any) -> None:
    parser = sub.add_parser("eval", help="evaluate retrieval on LoCoMo, BEIR, BEAM or the negatives benchmark")
    kinds = parser.add_subparsers(dest="dataset", required=True)
    locomo = kinds.add_parser("locomo", help="LoCoMo conversations: recall@5/10 and MRR per category")
    locomo.add_argument("--data", type=Path, default=DEFAULT_DATA / "locomo" / "locomo_dev5.json")
    locomo.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    locomo.add_argument("--questions", type=int, default=None, help="only the first N questions per conversation")
    locomo.add_argument("--as-client", action="store_true",
                        help="write turns as a plain client does (batch, \"Speaker: text\", no subject, no ANALYZE)")
    locomo.add_argument("--as-turns", action="store_true",
                        help="record turns as episodes (POST /v1/memories/{id}/turns) and search them with "
                             "include: [\"episodes\"]")
    beir = kinds.add_parser("beir", help="a BEIR dataset (e.g. SciFact): nDCG@10, recall@10, MRR")
    beir.add_argument("--data", type=Path, default=DEFAULT_DATA / "scifact")
    beir.add_argument("--split", default="train")
    beir.add_argument("--queries", type=int, default=None, help="only the first N judged queries")
    beir.add_argument("--docs", type=int, default=None, help="judged documents plus fillers up to N")
    negatives = kinds.add_parser("negatives", help="queries with nothing relevant in scope: empty answers, recall cost, AUROC")
    negatives.add_argument("--locomo", type=Path, default=DEFAULT_DATA / "locomo" / "locomo_dev5.json")
    negatives.add_argument("--scifact", type=Path, default=DEFAULT_DATA / "scifact")
    negatives.add_argument("--split", default="train")
    negatives.add_argument("--conversations", type=int, default=None, help="only the first N LoCoMo conversations")
    negatives.add_argument("--questions", type=int, default=None, help="only the first N questions per conversation")
    negatives.add_argument("--queries", type=int, default=None, help="only the first N judged SciFact queries")
    negatives.add_argument("--docs", type=int, default=None, help="SciFact: judged documents plus fillers up to N")
    negatives.add_argument("--fit", action="store_true",
                           help="also fit the score's models on each data set and check them on the others")
    negatives.add_argument("--dump", type=Path, default=None, help="write every scored row as JSON lines to this file")
    beam = kinds.add_parser("beam", help="BEAM conversations: evidence recall@10, hit@10 per category, plain BM25 beside")
    beam.add_argument("--data", type=Path, default=DEFAULT_DATA / "beam")
    beam.add_argument("--sizes", default="100K,500K", help="comma-separated sizes (file name part), e.g. 100K")
    beam.add_argument("--conversations", type=int, default=None, help="only the first N conversations of each size")
    beam.add_argument("--as-turns", action="store_true",
                      help="record messages as whole turns (episodes) and search them with include: [\"episodes\"]")
    for p in (locomo, beir, beam):
        p.add_argument("--no-plain", action="store_true", help="without the plain BM25 (bm25s) row (bm25s is in the dev extra)")
    for p in (locomo, beir, negatives, beam):
        p.add_argument("--database-url", default=None, help="use this PostgreSQL instead of a temporary one")
        p.add_argument("--cache-dir", type=Path, default=None, help="embedding cache (default $MEMORY_ENGINE_HOME/eval-cache)")
        p.add_argument(
            "--variant", action="append", default=[], metavar="NAME=SIGNAL:WEIGHT,...",
            help="an extra hybrid row with per-signal RRF weights, e.g. kw2=vector:1,keyword:2,entity:1",
        )
        p.add_argument("-v", "--verbose", action="store_true")
    parser.set_defaults(func=run)


@contextlib.contextmanager
def eval_container(database_url: str | None, cache_dir: Path | None) -> Iterator[Any]:
    from memory_engine.adapters.postgres.migrations import migrate
    from memory_engine.bootstrap import Container, set_container
    from memory_engine.evaluation.embedding_cache import DiskCachedEmbedder
    from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
    from memory_engine.settings import Settings

    settings = Settings()
    with tempfile.TemporaryDirectory(prefix="memory-engine-eval-") as tmp:
        server = None
        if database_url is None:
            server = EmbeddedPostgres(Path(tmp) / "pgdata")
            server.start()
            database_url = server.uri("postgres")
        container = Container(settings.model_copy(update={"database_url": database_url}))
        try:
            embedder = DiskCachedEmbedder(container.embedder, cache_dir or settings.home / "eval-cache")
            container.__dict__["embedder"] = embedder
            migrate(database_url, embedding_dim=embedder.dimensions)
            set_container(container)
            yield container
        finally:
            set_container(None)
            container.close()
            if server is not None:
                server.stop()


def parse_variants(specs: list[str]) -> dict[str, Any]:
    """``NAME=signal:weight,...`` -> {NAME: SearchConfig} (signals with weight 0 are dropped; lists not
    named, like the date list, keep the hybrid's weights)."""
    from memory_engine.domain.search_config import HYBRID, Signal

    out: dict[str, Any] = {}
    for spec in specs:
        name, _, body = spec.partition("=")
        weights = {Signal(k.strip()): float(v) for k, v in (part.split(":") for part in body.split(",") if part)}
        signals = {s for s, w in weights.items() if w > 0}
        out[name.strip()] = HYBRID.model_copy(update={"signals": frozenset(signals), "weights": HYBRID.weights | weights})
    return out


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    from memory_engine.domain.search_config import PRESETS

    started = time.perf_counter()
    with eval_container(args.database_url, args.cache_dir) as container:
        if args.dataset == "locomo":
            from memory_engine.evaluation import locomo

            conversations = locomo.load(args.data, max_conversations=args.conversations)
            variants = parse_variants(args.variant)
            table = locomo.evaluate(container, conversations, max_questions=args.questions,
                                    rows=(*locomo.ROWS, *variants), configs={**PRESETS, **variants},
                                    as_client=args.as_client, plain=not args.no_plain, as_turns=args.as_turns)
            title = f"LoCoMo retrieval ({args.data.name}, {len(conversations)} conversations, categories 1-4)"
        elif args.dataset == "beam":
            from memory_engine.evaluation import beam as beam_eval
            from memory_engine.evaluation.scored import NegativesReport

            chats = beam_eval.load(args.data, sizes=args.sizes.split(","), max_conversations=args.conversations)
            report = beam_eval.evaluate(container, chats, plain=not args.no_plain, as_turns=args.as_turns)
            print(report.render(f"BEAM ({args.sizes}, {len(chats)} conversations; the whole ranking)"))
            negatives_report = NegativesReport()
            negatives_report.add("beam (abstention)", report.negatives)
            print("\n" + negatives_report.render())
            print(f"\nembedding model: {container.embedder.model_id}; took {time.perf_counter() - started:.0f} s")
            return 0
        elif args.dataset == "negatives":
            from memory_engine.evaluation import negatives

            print(negatives.run(container, args))
            print(f"\nembedding model: {container.embedder.model_id}; took {time.perf_counter() - started:.0f} s")
            return 0
        else:
            from memory_engine.evaluation import beir

            data = beir.load(args.data, split=args.split, max_queries=args.queries, max_docs=args.docs)
            variants = parse_variants(args.variant)
            table = beir.evaluate(container, data, rows=(*beir.ROWS, *variants), configs={**PRESETS, **variants},
                                  plain=not args.no_plain)
            title = f"BEIR {args.data.name} ({len(data.corpus)} docs, {len(data.queries)} {args.split} queries)"
        print(table.render(title))
        print(f"\nembedding model: {container.embedder.model_id}; took {time.perf_counter() - started:.0f} s")
    return 0
