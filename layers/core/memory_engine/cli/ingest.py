"""`memory-engine ingest FILE [--project P] [--path PATH] [--wait]`.

Without ``--wait`` the file is copied into the drop folder, where a running `memory-engine dev`
ingests it. With ``--wait`` this process runs the same pipeline itself on the file's S3-shaped
event, shows a progress bar (pages extracted, chunks embedded) and exits 1 when the document
ends ``failed``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

from memory_engine import constants as c


def register(sub: Any) -> None:
    parser = sub.add_parser("ingest", help="ingest a file (PDF, text, markdown) into a project")
    parser.add_argument("file", type=Path)
    parser.add_argument("--project", default=c.DEFAULT_PROJECT, help="project name (default: default)")
    parser.add_argument("--path", default=None, help="document path (default: /<file name>)")
    parser.add_argument("--wait", action="store_true", help="run the pipeline here and wait, with a progress bar")
    parser.set_defaults(func=run)


def _bar(doc: Any, width: int = 30) -> str:
    view = doc.status_view()
    done = int(view["progress"] * width)
    pages = view["total_pages"] if view["total_pages"] is not None else "…"
    chunks = f"{view['indexed_chunks']}/{view['total_chunks'] if view['total_chunks'] is not None else '…'}"
    return f"\r[{'#' * done}{'.' * (width - done)}] pages extracted: {pages}  chunks embedded: {chunks}  {view['status']}"


def run(args: argparse.Namespace) -> int:
    from memory_engine.cli._common import local_container
    from memory_engine.domain.documents import normalize_path
    from memory_engine.domain.validation import project_name

    source: Path = args.file
    if not source.is_file():
        print(f"error: {source} is not a file", file=sys.stderr)
        return 2
    try:
        path = normalize_path(args.path or source.name)
        project_name(args.project)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with local_container() as container:
        if not args.wait:
            # the drop folder only takes folders of existing projects: this command names it explicitly
            container.projects.get_or_create_project(args.project)
            target = container.settings.drop_dir / args.project / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".part")
            shutil.copyfile(source, tmp)
            tmp.replace(target)
            print(f"dropped into {target}; a running `memory-engine dev` ingests it "
                  f"(check GET /v1/documents?path_prefix={path})")
            return 0
        return _ingest_and_wait(container, args.project, path, source)


def _ingest_and_wait(container: Any, project_name: str, path: str, source: Path) -> int:
    from memory_engine.adapters.local.s3_events import object_created_event
    from memory_engine.services.ingestion.steps import object_key

    project = container.projects.get_or_create_project(project_name)
    key = object_key(project.id, path)
    container.blob_store.put_file(key, source)
    event = object_created_event(container.blob_store.bucket, key, source.stat().st_size)
    outcome: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: outcome.update(result=container.pipeline_runner.run(event)), daemon=True)
    worker.start()
    interactive = sys.stderr.isatty()
    while worker.is_alive():
        worker.join(0.25)
        doc = container.documents.find_by_path(project.id, path)
        if doc is not None and interactive:
            print(_bar(doc), end="", file=sys.stderr, flush=True)
    doc = container.documents.find_by_path(project.id, path)
    result = outcome.get("result")
    if doc is None:
        print(f"\nerror: {result.error if result else 'ingestion did not start'}", file=sys.stderr)
        return 1
    print(_bar(doc), file=sys.stderr)
    if result is not None and result.status == "unchanged":
        print(f"{doc.id} {path}: unchanged (same content already ingested)")
        return 0
    if doc.status.value != "ready":
        print(f"error: {doc.id} {path} failed: {doc.error}", file=sys.stderr)
        return 1
    print(f"{doc.id} {path}: ready, {doc.total_pages} pages, {doc.total_chunks} chunks")
    return 0
