"""The local front door, today's against a well-kept library's (issue 38, item 7): measured, not switched.

Usage (from the repository root; gunicorn is not a dependency of the engine: install it into the
virtualenv first, ``.venv/bin/pip install gunicorn``)::

    .venv/bin/python bench/front_door.py                          # 2 workers each, 2 rounds A/B/A/B
    .venv/bin/python bench/front_door.py --workers 2 --rounds 3 --levels 1,8,32 --duration 15 --json

One local engine starts (:class:`LocalEngine`: embedded PostgreSQL, the ingestion process, the
background services) with today's front door, ``A``: ``local/http_gateway.py`` on ``http.server``
handing each request to a free process of ``local/workers.py``'s pool. Beside it, on the same
database, the same home and the same ingestion process, ``B``: gunicorn's pre-fork arbiter (its own
spawned process; the workers are forked from it, not from the engine's threads) with ``--workers``
workers of ``--worker-class`` (``sync``: one request at a time, no keep-alive; ``gthread`` with one
thread: one request at a time, keep-alive), each a "container" as a pool worker is (its own
``LocalContainer``, the handlers loaded and warmed before it serves), serving the same Lambda
handlers through a WSGI adapter (:func:`wsgi_app`: the request as the same HTTP API event,
``local/routing.route_event``, the response decoded as the gateway does). Then:

1. the protocol checks, on both: a garbled request line, a request line over 64 KiB, a header
   block over 100 fields, an unknown method, a body over 10 MB, a path with a control character;
   what each answers (status, content type) against the SPEC's JSON error body;
2. ``bench/load.py --url ... --json`` against A and B alternately, A/B/A/B..., ``--rounds`` times
   (the machine is shared: only runs that alternate are comparable).

Numbers, not pass/fail; the decision and its figures are in docs/local.md and
docs/benchmarks-history.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from memory_engine.local.apigw_events import decode_response, http_api_event
from memory_engine.local.worker_process import error_response
from memory_engine.settings import Settings

REPO = Path(__file__).resolve().parents[1]
MAX_BODY_BYTES = 10 * 1024 * 1024
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "TRACE", "OPTIONS")


# --- B: the WSGI adapter of the Lambda handlers, and the gunicorn application around it ---
def wsgi_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """One request in a gunicorn worker: the HTTP API event API Gateway would send, to the handler
    that owns the route (as a pool worker does), its Lambda proxy response written back."""
    from memory_engine.local.routing import route_event

    method = environ["REQUEST_METHOD"].upper()
    raw = environ.get("RAW_URI") or environ.get("PATH_INFO", "/")
    path, _, query = raw.partition("?")
    headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").lower()] = environ[key]
    if method not in METHODS:
        response = error_response(405, "method_not_allowed", f"method not allowed; use one of {', '.join(METHODS[:6])}")
    elif int(environ.get("CONTENT_LENGTH") or 0) > MAX_BODY_BYTES:
        response = error_response(413, "payload_too_large", f"request body over {MAX_BODY_BYTES} bytes")
    else:
        body = environ["wsgi.input"].read(MAX_BODY_BYTES + 1)
        if len(body) > MAX_BODY_BYTES:
            response = error_response(413, "payload_too_large", f"request body over {MAX_BODY_BYTES} bytes")
        else:
            event = http_api_event(method, path, query=query, headers=headers, body=body or None,
                                   source_ip=environ.get("REMOTE_ADDR", "127.0.0.1"))
            response = route_event(event)
    status, out_headers, payload = decode_response(response)
    start_response(f"{status} {_reason(status)}", [(k, v) for k, v in out_headers.items()
                                                  if k.lower() not in ("content-length", "connection")]
                   + [("Content-Length", str(len(payload)))])
    return [payload] if method != "HEAD" else []


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _worker_setup(settings: Settings, starts: Any, embed_threads: int) -> None:
    """What a pool worker does before it reports ready (``worker_process.worker_main``), in a gunicorn worker."""
    from memory_engine.bootstrap import set_container
    from memory_engine.local.container import LocalContainer
    from memory_engine.local.lambda_runtime import load_module
    from memory_engine.local.worker_process import WORKER_HANDLERS, ForwardingPipelineStarter
    from memory_engine.settings import EmbeddingProvider

    overrides: dict[str, Any] = {"pipeline_starter": ForwardingPipelineStarter(starts)}
    if settings.embedding_provider is EmbeddingProvider.LOCAL:
        from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

        overrides["embedder"] = OnnxMiniLMEmbedder(threads=embed_threads)
    container = LocalContainer(settings, **overrides)
    set_container(container)
    for relative in WORKER_HANDLERS:
        load_module(relative)
    container.embedder.embed_query("warm up")
    with container.database.connection() as connection:
        connection.execute("SELECT 1")


def serve_gunicorn(settings: Settings, starts: Any, port: int, workers: int, worker_class: str, parent_pid: int) -> None:
    """The spawned process of B: gunicorn's arbiter, which forks ``workers`` workers."""
    from gunicorn.app.base import BaseApplication

    from memory_engine.local.worker_process import die_with_parent

    die_with_parent(parent_pid)
    embed_threads = max(1, (os.cpu_count() or 1) // workers)
    options = {
        "bind": f"127.0.0.1:{port}", "workers": workers, "worker_class": worker_class, "threads": 1,
        "backlog": 1024, "timeout": 120, "keepalive": 120, "loglevel": "warning",
        # today's limits: a request line up to 64 KiB (gunicorn's cap is 8190; 0 lifts it), 100 header lines
        "limit_request_line": 0, "limit_request_fields": 100, "limit_request_field_size": 65536,
        "post_worker_init": lambda worker: _worker_setup(settings, starts, embed_threads),
    }

    class Front(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return wsgi_app

    Front().run()


# --- the run ---
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(base: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/v1/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{base} did not answer /v1/health within {timeout:.0f} s")


#: (name, raw bytes sent on a fresh connection): what the front door answers by itself.
PROTOCOL_CASES: tuple[tuple[str, bytes], ...] = (
    ("garbled request line", b"GARBAGE\r\n\r\n"),
    ("request line over 64 KiB", b"GET /v1/health?" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("101 header fields", b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(101))
     + b"\r\n"),
    ("unknown method PROPFIND", b"PROPFIND /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("body over 10 MB (declared)", b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Length: 20000000\r\n\r\n"),
    ("control character in the path", b"GET /v1/he%01alth HTTP/1.1\r\nHost: x\r\n\r\n"),
)


def protocol_checks(base: str) -> list[dict[str, Any]]:
    host, port = base.removeprefix("http://").split(":")
    found = []
    for name, raw in PROTOCOL_CASES:
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            try:
                conn.sendall(raw)
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            data = b""
            try:
                while chunk := conn.recv(65536):
                    data += chunk
            except OSError:
                pass
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        status = head[0].split(" ")[1] if head and head[0].startswith("HTTP/") else "(no answer)"
        ctype = next((h.split(":", 1)[1].strip() for h in head[1:] if h.lower().startswith("content-type")), "")
        found.append({"case": name, "status": status, "content_type": ctype})
    return found


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def heal_check(base: str, key: str, pids: Any, size: int, requests: int = 20) -> dict[str, Any]:
    """SIGKILL an idle worker, then ``requests`` requests one after another: how many failed, and how
    long until ``size`` workers (none of them the victim) serve again."""
    victim = pids()[0]
    began = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    failed = 0
    for _ in range(requests):
        request = urllib.request.Request(base + "/v1/memories", headers={"Authorization": f"Bearer {key}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                failed += response.status != 200
        except OSError:
            failed += 1
    while time.monotonic() - began < 120:
        current = pids()
        if len(current) >= size and victim not in current:
            break
        time.sleep(0.1)
    return {"failed_requests": failed, "of": requests, "whole_again_s": round(time.monotonic() - began, 1)}


def load_run(base: str, key: str, levels: str, duration: float, burst: int) -> dict[str, Any]:
    command = [sys.executable, str(REPO / "bench" / "load.py"), "--url", base, "--key", key, "--levels", levels,
               "--duration", str(duration), "--burst", str(burst), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return dict(json.loads(done.stdout))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="worker processes of each front door")
    parser.add_argument("--worker-class", default="sync", choices=("sync", "gthread"))
    parser.add_argument("--rounds", type=int, default=2, help="A/B pairs, alternated")
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from memory_engine.local.engine import LocalEngine

    with tempfile.TemporaryDirectory() as home:
        settings = Settings(MEMORY_ENGINE_HOME=home)  # type: ignore[call-arg]
        engine = LocalEngine(settings, port=_free_port(), workers=args.workers)
        base_a = engine.start()
        process = None
        try:
            assert engine.pool is not None and engine.database is not None and engine.admin_key
            shared = settings.model_copy(update={"database_url": engine.database.url})
            port_b = _free_port()
            process = multiprocessing.get_context("spawn").Process(
                target=serve_gunicorn, name="gunicorn-front", daemon=True,
                args=(shared, engine.pool.starts, port_b, args.workers, args.worker_class, os.getpid()))
            process.start()
            base_b = f"http://127.0.0.1:{port_b}"
            _wait_healthy(base_b)
            report: dict[str, Any] = {"workers": args.workers, "worker_class": args.worker_class, "cpus": os.cpu_count(),
                                      "protocol": {"A": protocol_checks(base_a), "B": protocol_checks(base_b)},
                                      "heal": {"A": heal_check(base_a, engine.admin_key, lambda: engine.pool.pids,
                                                               args.workers),
                                               "B": heal_check(base_b, engine.admin_key, lambda: _children(process.pid),
                                                               args.workers)},
                                      "rounds": []}
            for _ in range(args.rounds):
                for label, base in (("A", base_a), ("B", base_b)):
                    result = load_run(base, engine.admin_key, args.levels, args.duration, args.burst)
                    report["rounds"].append({"front": label, **result})
                    if not args.json:
                        _print_round(label, result)
            if args.json:
                print(json.dumps(report, indent=2))
            else:
                _print_protocol(report["protocol"])
                print("heal (an idle worker SIGKILLed):", json.dumps(report["heal"]))
        finally:
            if process is not None:
                process.terminate()
                process.join(30)
            engine.stop()
    return 0


def _print_round(label: str, result: dict[str, Any]) -> None:
    for level in result["levels"]:
        print(f"{label} clients={level['clients']:>4} req/s={level['throughput']:>7} p50={level['p50_ms']:>7} "
              f"p95={level['p95_ms']:>7} p99={level['p99_ms']:>7} errors={level['errors']} resets={level['resets']}")
    print(f"{label} acknowledged writes {result['acknowledged_writes']}, lost {result['lost_writes']}", flush=True)


def _print_protocol(protocol: dict[str, list[dict[str, Any]]]) -> None:
    for a, b in zip(protocol["A"], protocol["B"], strict=True):
        print(f"{a['case']:<32} A {a['status']} {a['content_type']:<18} B {b['status']} {b['content_type']}")


if __name__ == "__main__":
    sys.exit(main())
