"""`memory-engine ingest` (built by its issue)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser("ingest", help="not available yet")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("error: `memory-engine ingest` is not available yet", file=sys.stderr)
    return 2
