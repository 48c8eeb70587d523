"""`memory-engine ingest PATH [--project P] [--path DEST] [--wait]`.

PATH a file: without ``--wait`` the file is copied into the drop folder, where a running
`memory-engine dev` ingests it. With ``--wait`` this process runs the same pipeline itself on the
file's S3-shaped event, shows a progress bar (pages extracted, chunks embedded) and exits 1 when
the document ends ``failed``.

PATH a directory: every file under it (recursively; ``--include``/``--exclude`` globs on the
relative path; hidden files, hidden folders and symlinks skipped) runs through the pipeline in
this process, ``INGEST_WORKERS`` at a time, with one progress bar for the whole set and a summary:
ready, unchanged, failed with each reason. Exits 1 when any file failed.
"""

from __future__ import annotations

import argparse
import fnmatch
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memory_engine import constants as c

#: Failed files listed one by one in the summary (the rest: GET /v1/documents?status=failed).
LISTED_FAILURES = 50


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "ingest", help="ingest a file or a folder of files (PDF, Office, HTML, EPUB, e-mail, text, images) into a project")
    parser.add_argument("source", type=Path, metavar="PATH", help="a file, or a folder to ingest recursively")
    parser.add_argument("--project", default=c.DEFAULT_PROJECT, help="project name (default: default)")
    parser.add_argument("--path", default=None,
                        help="document path (a file; default /<file name>) or path prefix (a folder; default /<folder name>)")
    parser.add_argument("--wait", action="store_true", help="a file: run the pipeline here and wait, with a progress bar")
    parser.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="a folder: only files whose relative path or name matches (repeatable; default all)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="a folder: skip files whose relative path or name matches (repeatable)")
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

    source: Path = args.source
    if source.is_dir():
        with local_container() as container:
            return _ingest_folder(container, args.project, source, args.path, args.include, args.exclude)
    if not source.is_file():
        print(f"error: {source} is not a file or a folder", file=sys.stderr)
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
    from memory_engine.local.s3_events import object_created_event
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


def folder_files(root: Path, include: list[str], exclude: list[str]) -> Iterator[Path]:
    """Regular files under ``root`` in a stable order, without hidden entries or symlinks."""

    def matches(rel: str, globs: list[str]) -> bool:
        return any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], g) for g in globs)

    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")) or path.is_symlink() or not path.is_file():
            continue
        if include and not matches(rel, include):
            continue
        if exclude and matches(rel, exclude):
            continue
        yield path


def _ingest_folder(container: Any, project_name: str, root: Path, prefix: str | None, include: list[str],
                   exclude: list[str]) -> int:
    from memory_engine.domain.documents import normalize_path
    from memory_engine.local.s3_events import object_created_event
    from memory_engine.services.ingestion.steps import object_key

    files = list(folder_files(root, include, exclude))
    if not files:
        print(f"nothing to ingest under {root} (hidden files and symlinks are skipped; check --include)",
              file=sys.stderr)
        return 2
    base = (prefix if prefix is not None else "/" + root.resolve().name).rstrip("/")
    project = container.projects.get_or_create_project(project_name)
    starter = container.pipeline_starter
    runs: dict[str, str] = {}  # document path -> run id
    failed: dict[str, str] = {}  # path or file -> reason
    began = time.monotonic()
    interactive = sys.stderr.isatty()
    for file in files:
        rel = file.relative_to(root).as_posix()
        try:
            path = normalize_path(f"{base}/{rel}")
        except ValueError as exc:
            failed[rel] = str(exc)
            continue
        key = object_key(project.id, path)
        size = file.stat().st_size
        container.blob_store.put_file(key, file)
        runs[path] = starter.start(object_created_event(container.blob_store.bucket, key, size), size_bytes=size)
        if interactive and len(runs) % 50 == 0:
            _progress(starter, runs, len(files), began, queued=True)
    while True:
        results = {path: starter.finished(run_id) for path, run_id in runs.items()}
        if interactive:
            _progress(starter, runs, len(files), began)
        if all(r is not None for r in results.values()):
            break
        time.sleep(0.25)
    if interactive:
        print(file=sys.stderr)
    counts = {"ready": 0, "unchanged": 0}
    for path, result in results.items():
        assert result is not None
        if result.status == "succeeded":
            counts["ready"] += 1
        elif result.status == "unchanged":
            counts["unchanged"] += 1
        else:
            failed[path] = result.error or "failed"
    seconds = time.monotonic() - began
    print(f"{len(files)} files from {root} into project {project_name!r} under {base or '/'} in {seconds:.1f} s: "
          f"{counts['ready']} ready, {counts['unchanged']} unchanged, {len(failed)} failed")
    for path, reason in sorted(failed.items())[:LISTED_FAILURES]:
        print(f"  failed {path}: {reason}")
    if len(failed) > LISTED_FAILURES:
        print(f"  … and {len(failed) - LISTED_FAILURES} more (GET /v1/documents?status=failed)")
    return 1 if failed else 0


def _progress(starter: Any, runs: dict[str, str], total: int, began: float, *, queued: bool = False,
              width: int = 30) -> None:
    done = sum(1 for run_id in runs.values() if starter.finished(run_id) is not None)
    filled = int(width * done / max(1, total))
    rate = done / max(1e-9, time.monotonic() - began)
    state = f"queued {len(runs)}/{total}" if queued else f"{rate:.1f} files/s"
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} settled  {state}   ", end="", file=sys.stderr,
          flush=True)
