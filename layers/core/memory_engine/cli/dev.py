"""`memory-engine dev`: run the whole local engine until Ctrl-C / SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from memory_engine.local.engine import LocalEngine
from memory_engine.local.workers import default_workers
from memory_engine.settings import Settings


def register(sub: Any) -> None:
    parser = sub.add_parser("dev", help="run the local engine (embedded PostgreSQL, HTTP API, drop folder, events)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help=f"worker processes serving requests concurrently, one request each at a time like Lambda "
             f"containers (default: one per CPU, 2..8; here {default_workers()}); 0 serves every request "
             f"in the main process, one at a time",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    settings = Settings()
    if args.workers is not None and args.workers < 0:
        print("--workers must be 0 or more", file=sys.stderr)
        return 2
    engine = LocalEngine(settings, host=args.host, port=args.port, workers=args.workers)
    try:
        base_url = engine.start()
        if engine.admin_key:
            print("First start: created project 'default' and this admin API key (shown only once):", flush=True)
            print(f"  {engine.admin_key}", flush=True)
        workers = f"{engine.pool.size} workers" if engine.pool else "in-process"
        print(f"memory-engine ready at {base_url}  ({workers}; home: {settings.home.resolve()}, drop folder: "
              f"{settings.drop_dir.resolve()}; Ctrl-C to stop)", flush=True)
        while not stop.wait(0.5):
            pass
        print("stopping…", file=sys.stderr, flush=True)
    finally:
        engine.stop()
    return 0
