"""Ingestion throughput on one file: the real pipeline (local runner -> the ingestion Lambda
handlers -> PostgreSQL + pgvector, the local embedding model).

Usage (from the repository root)::

    .venv/bin/python bench/ingest.py [--pdf ../shared/data/pdfs/GeoTopo-komprimiert.pdf] [--runs 1]

Uses DATABASE_URL when set, else a throwaway embedded PostgreSQL. Prints pages/s for extract,
chunks/s for embed, end-to-end seconds, and the share of time spent in embedding (target >= 70 %).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "layers" / "core"))
DEFAULT_PDF = REPO.parent / "shared" / "data" / "pdfs" / "GeoTopo-komprimiert.pdf"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--runs", type=int, default=1, help="re-ingest this many times (new generation each)")
    parser.add_argument("--map-concurrency", type=int, default=2)
    args = parser.parse_args()
    if not args.pdf.exists():
        print(f"error: {args.pdf} not found", file=sys.stderr)
        return 2

    from memory_engine.adapters.postgres.migrations import migrate
    from memory_engine.bootstrap import set_container
    from memory_engine.local.container import LocalContainer
    from memory_engine.local.pipeline import PipelineRunner
    from memory_engine.local.s3_events import object_created_event
    from memory_engine.services.ingestion.steps import object_key
    from memory_engine.settings import Settings

    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        server = None
        url = os.environ.get("DATABASE_URL")
        if not url:
            from memory_engine.adapters.local.embedded_postgres import EmbeddedPostgres

            server = EmbeddedPostgres(Path(tmp) / "pgdata")
            url = server.start()
        try:
            container = LocalContainer(Settings(DATABASE_URL=url, MEMORY_ENGINE_HOME=tmp))  # type: ignore[call-arg]
            migrate(url, embedding_dim=container.embedder.dimensions)
            set_container(container)
            container.embedder.embed_query("warm up")
            runner = PipelineRunner(invoke=container.pipeline_runner.invoke, map_concurrency=args.map_concurrency)
            project = container.projects.get_or_create_project(f"bench-{int(time.time())}")
            rows = []
            for run in range(args.runs):
                path = f"/bench/run-{run}-{args.pdf.name}"
                key = object_key(project.id, path)
                container.blob_store.put_file(key, args.pdf)
                began = time.perf_counter()
                result = runner.run(object_created_event(container.blob_store.bucket, key, args.pdf.stat().st_size))
                total = time.perf_counter() - began
                doc = container.documents.find_by_path(project.id, path)
                if result.status != "succeeded" or doc is None:
                    print(f"error: run failed: {result.error}", file=sys.stderr)
                    return 1
                t = result.seconds_by_step
                rows.append((doc.total_pages or 0, doc.total_chunks or 0, t.get("Extract", 0.0),
                             t.get("EmbedBatches", 0.0), total))
            set_container(None)
            container.close()
        finally:
            if server is not None:
                server.stop()

    pages, chunks = rows[0][0], rows[0][1]
    extract = statistics.median(r[2] for r in rows)
    embed = statistics.median(r[3] for r in rows)
    total = statistics.median(r[4] for r in rows)
    print(f"file: {args.pdf.name}  pages: {pages}  chunks: {chunks} (strategy page)  runs: {len(rows)}")
    print(f"extract: {pages / extract:.1f} pages/s ({extract:.2f} s)")
    print(f"embed:   {chunks / embed:.1f} chunks/s ({embed:.2f} s, map concurrency {args.map_concurrency})")
    print(f"end-to-end: {total:.2f} s")
    print(f"share of time in embedding: {100 * embed / total:.0f} %  (target >= 70 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
