"""Ingestion throughput on one file: the real pipeline (local runner -> the ingestion Lambda
handlers -> PostgreSQL + pgvector, the local embedding model).

Usage (from the repository root)::

    .venv/bin/python bench/ingest.py [--pdf ../shared/data/pdfs/GeoTopo-komprimiert.pdf] [--runs 3]
                                     [--model-alone] [--no-stream]
    .venv/bin/python bench/ingest.py --formats [../shared/data/formats] [--runs 3]

Uses DATABASE_URL when set, else a throwaway embedded PostgreSQL. Prints the seconds of each step
(with streaming, Extract+Chunk overlaps EmbedBatches: both are spans from the start of the pass),
end-to-end seconds, and the share of the end-to-end time that is embedding (target >= 85 %):

* without ``--model-alone``: the EmbedBatches span over the end-to-end time (with streaming this
  span covers the parsing too, so it says little);
* with ``--model-alone``: after each run, the same chunks are embedded again by the model alone, in the
  same batches and with the same concurrency, and the share is that time over the run's end-to-end
  time (1.0 = ingestion as fast as the model; what is left is parsing, storage and hand-offs that
  did not overlap).

``--no-stream`` runs the steps one after the other, as the state machine does (the "before").

``--formats DIR`` ingests every file of DIR (the dev files of issue 37: Word, PowerPoint, Excel,
HTML, EPUB, e-mail, OpenDocument; ``README.md`` and ``*.expected.html`` left out) and reports per
format, over the runs (medians): the pages (sections) and chunks, **pages/s of the native
extractor alone** (the file's bytes -> its pages, no database, no model: what the format costs to
read) and pages/s of the Extract+Chunk span in the pipeline, and the end-to-end seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "layers" / "core"))
DEFAULT_PDF = REPO.parent / "shared" / "data" / "pdfs" / "GeoTopo-komprimiert.pdf"
DEFAULT_FORMATS = REPO.parent / "shared" / "data" / "formats"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--runs", type=int, default=1, help="re-ingest this many times (new generation each)")
    parser.add_argument("--map-concurrency", type=int, default=2)
    parser.add_argument("--model-alone", action="store_true",
                        help="share = the model alone on the same chunks / end to end (see above)")
    parser.add_argument("--no-stream", action="store_true", help="Extract, Chunk, EmbedBatches one after the other")
    parser.add_argument("--formats", type=Path, nargs="?", const=DEFAULT_FORMATS, default=None, metavar="DIR",
                        help=f"every file of DIR, pages/s per format (default DIR: {DEFAULT_FORMATS})")
    args = parser.parse_args()
    if args.formats is not None:
        return formats(args)
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
            from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres

            server = EmbeddedPostgres(Path(tmp) / "pgdata")
            url = server.start()
        try:
            container = LocalContainer(Settings(DATABASE_URL=url, MEMORY_ENGINE_HOME=tmp))  # type: ignore[call-arg]
            migrate(url, embedding_dim=container.embedder.dimensions)
            set_container(container)
            container.embedder.embed_query("warm up")
            base = container.pipeline_runner
            streaming = {} if args.no_stream else {"stream": base.stream}
            runner = PipelineRunner(invoke=base.invoke, map_concurrency=args.map_concurrency, **streaming)
            project = container.projects.get_or_create_project(f"bench-{int(time.time())}")
            rows = []
            for run in range(args.runs):
                path = f"/bench/run-{run}-{args.pdf.name}"
                key = object_key(project.id, path)
                container.blob_store.put_file(key, args.pdf)
                # the model alone right before and right after the run: the machine's load drifts
                alone = [_model_alone(container, rows[-1][5], args.map_concurrency)] if args.model_alone and rows else []
                began = time.perf_counter()
                result = runner.run(object_created_event(container.blob_store.bucket, key, args.pdf.stat().st_size))
                total = time.perf_counter() - began
                doc = container.documents.find_by_path(project.id, path)
                if result.status != "succeeded" or doc is None:
                    print(f"error: run failed: {result.error}", file=sys.stderr)
                    return 1
                t = result.seconds_by_step
                parse = t.get("Extract+Chunk", t.get("Extract", 0.0) + t.get("Chunk", 0.0))
                embed = t.get("EmbedBatches", 0.0)
                if args.model_alone:
                    alone.append(_model_alone(container, doc.id, args.map_concurrency))
                    embed = statistics.mean(alone)
                rows.append((doc.total_pages or 0, doc.total_chunks or 0, parse, embed, total, doc.id))
                print(f"run {run + 1}: parse {parse:.2f} s, {'model alone' if args.model_alone else 'embed'} "
                      f"{embed:.2f} s, end to end {total:.2f} s ({100 * embed / total:.0f} %)", flush=True)
            set_container(None)
            container.close()
        finally:
            if server is not None:
                server.stop()

    pages, chunks = rows[0][0], rows[0][1]
    extract = statistics.median(r[2] for r in rows)
    embed = statistics.median(r[3] for r in rows)
    total = statistics.median(r[4] for r in rows)
    shares = sorted(100 * r[3] / r[4] for r in rows)
    mode = "one after the other" if args.no_stream else "streamed"
    print(f"file: {args.pdf.name}  pages: {pages}  chunks: {chunks} (strategy page)  runs: {len(rows)}  ({mode})")
    print(f"extract{'' if args.no_stream else '+chunk span'}: {pages / extract:.1f} pages/s ({extract:.2f} s)")
    label = "model alone" if args.model_alone else "embed"
    print(f"{label}: {chunks / embed:.1f} chunks/s ({embed:.2f} s, map concurrency {args.map_concurrency})")
    print(f"end-to-end: {total:.2f} s")
    print(f"share of time in embedding: {100 * embed / total:.0f} % (runs {', '.join(f'{x:.0f}' for x in shares)})"
          "  (target >= 85 %)")
    return 0


def formats(args: argparse.Namespace) -> int:
    """``--formats``: every file of the folder, by the native extractor alone and through the
    pipeline, ``--runs`` times; one line per format (medians over its files' runs)."""
    folder: Path = args.formats
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != "README.md"
                   and not p.name.endswith(".expected.html")) if folder.is_dir() else []
    if not files:
        print(f"error: no files in {folder}", file=sys.stderr)
        return 2

    from memory_engine.adapters.extractors import native_extractors
    from memory_engine.domain.sniffing import detect
    from memory_engine.local.pipeline import PipelineRunner
    from memory_engine.local.s3_events import object_created_event
    from memory_engine.services.ingestion.steps import object_key

    extractors = native_extractors()
    per_format: dict[str, list[tuple[int, int, float, float, float]]] = {}
    with _container() as container:
        base = container.pipeline_runner
        streaming = {} if args.no_stream else {"stream": base.stream}
        runner = PipelineRunner(invoke=base.invoke, map_concurrency=args.map_concurrency, **streaming)
        project = container.projects.get_or_create_project(f"bench-formats-{int(time.time())}")
        for file in files:
            data = file.read_bytes()
            kind = detect(file.name, None, data).content_type
            if kind not in extractors:
                print(f"skipped {file.name}: {kind} is not read natively", flush=True)
                continue
            for run in range(args.runs):
                began = time.perf_counter()
                alone_pages = sum(1 for _ in extractors[kind].pages(data, name=file.name))
                alone = time.perf_counter() - began
                path = f"/bench/run-{run}/{file.name}"
                key = object_key(project.id, path)
                container.blob_store.put(key, data)
                began = time.perf_counter()
                result = runner.run(object_created_event(container.blob_store.bucket, key, len(data)))
                total = time.perf_counter() - began
                doc = container.documents.find_by_path(project.id, path)
                if result.status != "succeeded" or doc is None:
                    print(f"error: {file.name} failed: {result.error}", file=sys.stderr)
                    return 1
                t = result.seconds_by_step
                parse = t.get("Extract+Chunk", t.get("Extract", 0.0) + t.get("Chunk", 0.0))
                per_format.setdefault(file.suffix.lower().lstrip(".") or kind, []).append(
                    (alone_pages, doc.total_chunks or 0, alone, parse, total))
                print(f"{file.name} run {run + 1}: {alone_pages} pages, {doc.total_chunks} chunks, extractor alone "
                      f"{alone * 1000:.0f} ms, Extract+Chunk {parse:.2f} s, end to end {total:.2f} s", flush=True)
    print(f"\nper format (median over files x runs, {args.runs} run(s) each)")
    print(f"{'format':<8} {'files':>5} {'pages':>6} {'chunks':>6} {'extractor pages/s':>18} "
          f"{'extract+chunk pages/s':>22} {'end to end s':>13}")
    for name, rows in sorted(per_format.items()):
        pages = sum(r[0] for r in rows) // args.runs
        chunks = sum(r[1] for r in rows) // args.runs
        alone_rate = statistics.median(r[0] / r[2] for r in rows if r[2] > 0)
        parse_rate = statistics.median(r[0] / r[3] for r in rows if r[3] > 0) if any(r[3] for r in rows) else 0.0
        print(f"{name:<8} {len(rows) // args.runs:>5} {pages:>6} {chunks:>6} {alone_rate:>18.1f} {parse_rate:>22.1f} "
              f"{statistics.median(r[4] for r in rows):>13.2f}")
    return 0


@contextmanager
def _container() -> Iterator[Any]:
    """A LocalContainer on DATABASE_URL, else on a throwaway embedded PostgreSQL; the model warmed up."""
    from memory_engine.adapters.postgres.migrations import migrate
    from memory_engine.bootstrap import set_container
    from memory_engine.local.container import LocalContainer
    from memory_engine.settings import Settings

    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        server = None
        url = os.environ.get("DATABASE_URL")
        if not url:
            from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres

            server = EmbeddedPostgres(Path(tmp) / "pgdata")
            url = server.start()
        try:
            container = LocalContainer(Settings(DATABASE_URL=url, MEMORY_ENGINE_HOME=tmp))
            migrate(url, embedding_dim=container.embedder.dimensions)
            set_container(container)
            container.embedder.embed_query("warm up")
            try:
                yield container
            finally:
                set_container(None)
                container.close()
        finally:
            if server is not None:
                server.stop()


def _model_alone(container: Any, document_id: str, concurrency: int) -> float:
    """Seconds the ingestion model needs for this document's chunks alone: the same batches of
    EMBED_BATCH_SIZE, ``concurrency`` at a time, no parsing, no storage."""
    from concurrent.futures import ThreadPoolExecutor

    from memory_engine.domain.documents import EMBED_BATCH_SIZE

    with container.database.connection() as conn:
        texts = [r["content"] for r in conn.execute(
            "SELECT c.content FROM document_chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.document_id = %s AND c.generation = d.active_generation ORDER BY c.chunk_index",
            (document_id,)).fetchall()]
    embedder = container.ingestion_ports.embedder
    batches = [texts[i:i + EMBED_BATCH_SIZE] for i in range(0, len(texts), EMBED_BATCH_SIZE)]
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        list(pool.map(embedder.embed_documents, batches))
    return time.perf_counter() - began


if __name__ == "__main__":
    sys.exit(main())
