"""`memory-engine openapi [--check FILE]`: print the OpenAPI document, or check a committed copy."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser("openapi", help="print the OpenAPI 3 document of the HTTP API")
    parser.add_argument("--write", type=Path, default=None, help="write it to this file instead of stdout")
    parser.add_argument("--check", type=Path, default=None, help="exit 1 when this file differs from the code")
    parser.set_defaults(func=run)


def render() -> str:
    from memory_engine.http.openapi import full_openapi_document

    return json.dumps(full_openapi_document(), indent=2, sort_keys=True) + "\n"


def run(args: argparse.Namespace) -> int:
    document = render()
    if args.check is not None:
        if not args.check.exists() or args.check.read_text() != document:
            print(f"{args.check} is out of date: run `memory-engine openapi --write {args.check}`", file=sys.stderr)
            return 1
        print(f"{args.check} is up to date")
        return 0
    if args.write is not None:
        args.write.write_text(document)
        print(f"wrote {args.write}")
        return 0
    sys.stdout.write(document)
    return 0
