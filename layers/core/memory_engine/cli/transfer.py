"""`memory-engine export` and `memory-engine import`: a memory as JSONL, streamed to and from a file."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: Any) -> None:
    export = sub.add_parser("export", help="write a memory as JSONL (streamed; stdout unless --output)")
    export.add_argument("memory_id")
    export.add_argument("--project", required=True, help="the memory's project (name or id)")
    export.add_argument("--output", "-o", help="file to write (default: stdout)")
    export.add_argument("--no-vectors", action="store_true", help="leave vectors out (an import re-embeds)")
    export.set_defaults(func=run_export)
    imp = sub.add_parser("import", help="recreate a memory from a JSONL export in a project (new ids)")
    imp.add_argument("file", help="the export (JSONL), or - for stdin")
    imp.add_argument("--project", required=True, help="project to import into (created when missing)")
    imp.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    from memory_engine.cli._common import local_container
    from memory_engine.services.export_import import export_memory

    with local_container() as container:
        project = container.projects.get_project(args.project)
        if project is None:
            print(f"error: no project {args.project!r}", file=sys.stderr)
            return 1
        lines = export_memory(container.lifecycle, container.embedder, project.id, args.memory_id,
                              vectors=not args.no_vectors)
        if args.output:
            with open(args.output, "w", encoding="utf-8") as out:
                out.writelines(lines)
        else:
            sys.stdout.writelines(lines)
    return 0


def run_import(args: argparse.Namespace) -> int:
    from memory_engine.cli._common import local_container
    from memory_engine.services.memory_import import import_memory

    with local_container() as container:
        project = container.projects.get_or_create_project(args.project)
        source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
        try:
            summary = import_memory(source, project_id=project.id, importer=container.importer,
                                    embedder=container.embedder, episodes=container.episodes)
        finally:
            if source is not sys.stdin:
                source.close()
    print(json.dumps({**summary.counts(), "memory": summary.memory.model_dump(mode="json")}))
    return 0
