"""Mixed load on the local engine over 127.0.0.1: throughput, latency percentiles, errors, lost writes.

Usage (from the repository root)::

    .venv/bin/python bench/load.py                                  # starts `memory-engine dev` in a temp home
    .venv/bin/python bench/load.py --levels 1,8,32,128 --duration 20 --workers 2 --json
    .venv/bin/python bench/load.py --url http://127.0.0.1:8787 --key me_...   # a running engine

At each level, that many clients (threads, one keep-alive connection each) send requests back to
back for ``--duration`` seconds: about 70 % ``POST /v1/knowledge/search`` over one memory and the
documents, 25 % ``POST /v1/memory-entries`` (new facts, random words so the funnel creates them) and
5 % ``POST /v1/documents`` (a short text). Any answer other than the expected 2xx, and any connection
error, counts as an error (resets are also counted on their own). Afterwards every acknowledged
write is read back (``GET /v1/memory-entries/{id}``, ``GET /v1/documents/{id}``): an entry that is
missing or holds other content is a lost write. ``--burst N`` also opens N fresh connections at
once, each sending one write (the listen-backlog case). The exit status is 1 when any level had an
error or a write was lost.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

#: (operation, weight): the mix of the SPEC's agent workload.
DEFAULT_MIX = (("search", 70), ("write", 25), ("document", 5))
WORDS = (
    "amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon marble nectar "
    "orchid pepper quartz raven saffron tundra umber velvet willow xenon yarrow zephyr anchor beacon "
    "canyon dune estuary falcon glacier heron island jasper kelp lantern meadow nimbus oasis prairie "
    "quarry reef summit thicket upland valley wharf yonder zenith alder birch cobalt dahlia elm fern "
    "granite hazel iris jade lilac maple nutmeg olive pine quince rowan sage teak ursa violet walnut"
).split()


@dataclass
class LevelResult:
    clients: int
    seconds: float
    requests: int = 0
    errors: int = 0
    resets: int = 0
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    by_operation: dict[str, int] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return 0.0
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]

    def summary(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k != "latencies_ms"}
        data.update(throughput=round(self.throughput, 1), p50_ms=round(self.percentile(50), 1),
                    p95_ms=round(self.percentile(95), 1), p99_ms=round(self.percentile(99), 1))
        return data


@dataclass
class Acknowledged:
    """Writes the engine acknowledged: entry id -> content, document ids."""

    entries: dict[str, str] = field(default_factory=dict)
    documents: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class Client:
    """One keep-alive HTTP/1.1 connection with the API key."""

    def __init__(self, base_url: str, key: str, timeout: float = 120.0) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        payload = json.dumps(body).encode() if body is not None else None
        try:
            self.conn.request(method, path, body=payload, headers=self.headers)
            response = self.conn.getresponse()
            raw = response.read()
        except BaseException:
            self.close()
            raise
        if response.getheader("connection", "").lower() == "close":
            self.close()
        return response.status, (json.loads(raw) if raw else None)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(10)) + f" ({uuid.uuid4().hex[:8]})"


def prepare(base_url: str, key: str, *, seed_entries: int = 50) -> str:
    """A memory with some facts and a document, so searches have something to find; its id."""
    client = Client(base_url, key)
    status, body = client.request("POST", "/v1/memories", {"name": f"load-{uuid.uuid4().hex[:8]}"})
    if status != 201:
        raise RuntimeError(f"cannot create the load memory: {status} {body}")
    memory_id: str = body["id"]
    rng = random.Random(7)
    for _ in range(seed_entries):
        client.request("POST", "/v1/memory-entries", {"memory_id": memory_id, "content": _sentence(rng)})
    client.request("POST", "/v1/documents", {"path": f"/load/seed-{uuid.uuid4().hex[:8]}.md",
                                             "content": " ".join(_sentence(rng) for _ in range(20))})
    client.close()
    return memory_id


def _one(client: Client, op: str, memory_id: str, rng: random.Random, acked: Acknowledged) -> tuple[bool, str]:
    """Send one operation; (ok, detail)."""
    if op == "search":
        query = " ".join(rng.choice(WORDS) for _ in range(3))
        status, body = client.request("POST", "/v1/knowledge/search",
                                      {"query": query, "memory_ids": [memory_id], "limit": 10})
        return status == 200, f"search {status} {str(body)[:200]}"
    if op == "write":
        content = _sentence(rng)
        status, body = client.request("POST", "/v1/memory-entries", {"memory_id": memory_id, "content": content})
        if status in (200, 201) and isinstance(body, dict) and body.get("id"):
            if body.get("action") == "created":
                with acked.lock:
                    acked.entries[body["id"]] = content
            return True, ""
        return False, f"write {status} {str(body)[:200]}"
    path = f"/load/{uuid.uuid4().hex}.md"
    status, body = client.request("POST", "/v1/documents", {"path": path, "content": _sentence(rng)})
    if status in (201, 202) and isinstance(body, dict) and body.get("id"):
        with acked.lock:
            acked.documents.append(body["id"])
        return True, ""
    return False, f"document {status} {str(body)[:200]}"


def run_level(base_url: str, key: str, memory_id: str, clients: int, duration: float, acked: Acknowledged, *,
              mix: Sequence[tuple[str, int]] = DEFAULT_MIX, seed: int = 1) -> LevelResult:
    """``clients`` threads send the mix back to back for ``duration`` seconds."""
    ops, weights = [op for op, _ in mix], [w for _, w in mix]
    result = LevelResult(clients=clients, seconds=duration)
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def loop(index: int) -> None:
        rng = random.Random(seed * 100_003 + index)
        client = Client(base_url, key)
        latencies: list[float] = []
        counts: dict[str, int] = {}
        errors = resets = 0
        samples: list[str] = []
        start.wait()
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            op = rng.choices(ops, weights)[0]
            began = time.perf_counter()
            try:
                ok, detail = _one(client, op, memory_id, rng, acked)
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
                ok, detail = False, f"{op} {type(exc).__name__}"
                resets += 1
            except (OSError, http.client.HTTPException) as exc:
                ok, detail = False, f"{op} {type(exc).__name__}: {exc}"
            latencies.append((time.perf_counter() - began) * 1000)
            counts[op] = counts.get(op, 0) + 1
            if not ok:
                errors += 1
                if len(samples) < 3:
                    samples.append(detail)
        client.close()
        with lock:
            result.latencies_ms.extend(latencies)
            result.requests += len(latencies)
            result.errors += errors
            result.resets += resets
            for op_name, n in counts.items():
                result.by_operation[op_name] = result.by_operation.get(op_name, 0) + n
            result.error_samples.extend(samples[: max(0, 5 - len(result.error_samples))])

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    result.seconds = time.monotonic() - began
    return result


def burst(base_url: str, key: str, memory_id: str, clients: int, acked: Acknowledged) -> LevelResult:
    """``clients`` fresh connections opened at the same instant, one write each."""
    result = LevelResult(clients=clients, seconds=0.0)
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def one(index: int) -> None:
        client = Client(base_url, key)
        rng = random.Random(900_001 + index)
        start.wait()
        began = time.perf_counter()
        reset = 0
        try:
            ok, detail = _one(client, "write", memory_id, rng, acked)
        except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
            ok, detail, reset = False, type(exc).__name__, 1
        except (OSError, http.client.HTTPException) as exc:
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        elapsed = (time.perf_counter() - began) * 1000
        client.close()
        with lock:
            result.requests += 1
            result.latencies_ms.append(elapsed)
            result.resets += reset
            if not ok:
                result.errors += 1
                if len(result.error_samples) < 5:
                    result.error_samples.append(detail)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    result.seconds = time.monotonic() - began
    result.by_operation = {"write": result.requests}
    return result


def read_back(base_url: str, key: str, acked: Acknowledged, *, threads: int = 8) -> list[str]:
    """Every acknowledged write, read back; the ids that are missing or changed."""
    items: list[tuple[str, str | None]] = [(i, c) for i, c in acked.entries.items()]
    items += [(doc_id, None) for doc_id in acked.documents]
    lost: list[str] = []
    lock = threading.Lock()
    chunks = [items[i::threads] for i in range(threads)]

    def check(chunk: list[tuple[str, str | None]]) -> None:
        client = Client(base_url, key)
        for item_id, content in chunk:
            path = f"/v1/memory-entries/{item_id}" if content is not None else f"/v1/documents/{item_id}"
            status, body = client.request("GET", path)
            if status != 200 or (content is not None and body.get("content") != content):
                with lock:
                    lost.append(item_id)
        client.close()

    workers = [threading.Thread(target=check, args=(chunk,)) for chunk in chunks if chunk]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return lost


@contextlib.contextmanager
def local_engine(workers: int | None) -> Iterator[tuple[str, str]]:
    """`memory-engine dev` in a temporary home on a free port; (base URL, admin key)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tempfile.mkdtemp(prefix="memory-engine-load-")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["MEMORY_ENGINE_HOME"] = home
    command = [sys.executable, "-m", "memory_engine.cli", "dev", "--port", str(port)]
    if workers is not None:
        command += ["--workers", str(workers)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        key = ""
        assert proc.stdout is not None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("memory-engine dev exited before it was ready")
            if line.strip().startswith("me_"):
                key = line.strip()
            if "ready at" in line:
                break
        yield f"http://127.0.0.1:{port}", key
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def _print_table(results: list[LevelResult], lost: int, acknowledged: int) -> None:
    print(f"{'clients':>7} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'requests':>9} {'errors':>7} {'resets':>7}")
    for r in results:
        print(f"{r.clients:>7} {r.throughput:>8.1f} {r.percentile(50):>8.1f} {r.percentile(95):>8.1f} "
              f"{r.percentile(99):>8.1f} {r.requests:>9} {r.errors:>7} {r.resets:>7}")
        for sample in r.error_samples:
            print(f"        e.g. {sample}")
    print(f"acknowledged writes read back: {acknowledged}, lost: {lost}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running engine (default: start `memory-engine dev` in a temp home)")
    parser.add_argument("--key", help="an API key with read+write scopes (with --url)")
    parser.add_argument("--workers", type=int, help="`memory-engine dev --workers` when this script starts it")
    parser.add_argument("--levels", default="1,8,32,128", help="concurrent clients per level (comma-separated)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per level")
    parser.add_argument("--burst", type=int, default=200, help="fresh connections at once at the end (0: none)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    levels = [int(n) for n in args.levels.split(",") if n.strip()]

    with contextlib.ExitStack() as stack:
        if args.url:
            if not args.key:
                parser.error("--url needs --key")
            base_url, key = args.url.rstrip("/"), args.key
        else:
            base_url, key = stack.enter_context(local_engine(args.workers))
        memory_id = prepare(base_url, key)
        acked = Acknowledged()
        results = [run_level(base_url, key, memory_id, n, args.duration, acked, seed=n) for n in levels]
        if args.burst:
            results.append(burst(base_url, key, memory_id, args.burst, acked))
        lost = read_back(base_url, key, acked)
    acknowledged = len(acked.entries) + len(acked.documents)
    if args.json:
        print(json.dumps({"levels": [r.summary() for r in results], "acknowledged_writes": acknowledged,
                          "lost_writes": len(lost), "cpus": os.cpu_count()}, indent=2))
    else:
        _print_table(results, len(lost), acknowledged)
    return 1 if lost or any(r.errors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
