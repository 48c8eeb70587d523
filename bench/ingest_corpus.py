"""Bulk ingestion through the HTTP API, as a user loads a corpus: `memory-engine dev` in a
subprocess (a fresh MEMORY_ENGINE_HOME, its admin key), the corpus posted to
`POST /v1/documents/batch` (100 per request, a few client threads) or one document per request
(`--batch 0`), then polled until every document is `ready` or `failed`.

Usage (from the repository root)::

    .venv/bin/python bench/ingest_corpus.py --corpus ../shared/data/scifact/corpus.jsonl [--limit N]
        [--batch 100] [--clients 4] [--broken 0.01] [--json]

Prints, from the same run: the embedding model's own throughput on a sample of the same texts
(this process, batches of the model's size, while the engine is idle), the engine's ingestion
throughput (documents ready per second from the first request to the last `ready`) and their
ratio; `/v1/health` and search latency while the queue drains against the same searches once
it has drained; and, with ``--broken``, that exactly the broken documents end `failed`, each with
its reason. ``--url``/``--key`` target an engine that is already running instead.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "layers" / "core"))
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
SEARCHES = ("cerebral white matter in newborns", "vitamin D and bone density", "gene expression in tumours",
            "antibiotic resistance", "insulin signalling in muscle", "immune response to infection")


class Client:
    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url.rstrip("/"), key

    def call(self, method: str, path: str, body: Any = None, timeout: float = 120) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.key}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw) if raw else None

    def timed(self, method: str, path: str, body: Any = None) -> float:
        began = time.perf_counter()
        status, _ = self.call(method, path, body, timeout=30)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status}")
        return (time.perf_counter() - began) * 1000


def load_corpus(path: Path, limit: int | None) -> list[dict[str, str]]:
    docs = []
    with path.open() as f:
        for line in f:
            row = json.loads(line)
            docs.append({"path": f"/corpus/{row['_id']}.txt", "content": f"{row.get('title', '')}\n\n{row['text']}"})
            if limit and len(docs) >= limit:
                break
    return docs


def broken_documents(count: int) -> list[dict[str, Any]]:
    """Empty, binary-looking and oversized texts, in turn: what a real corpus export holds."""
    from memory_engine.domain.documents import MAX_TEXT_CHARS

    kinds = [("empty", ""), ("binary", "\x00\x01\x02PK\x03\x04" * 50), ("oversized", "x" * (MAX_TEXT_CHARS + 1))]
    return [{"path": f"/broken/{i}-{kinds[i % 3][0]}.txt", "content": kinds[i % 3][1], "broken": kinds[i % 3][0]}
            for i in range(count)]


def model_throughput(texts: list[str], workers: int) -> float:
    """Texts per second of the engine's own embedding model, in this process, the better of the
    two ways it can run on this machine: one session of the default size embedding batches of 32
    (the model's batch size), or ``workers`` one-thread sessions each embedding one text per call
    from its own thread (how the local ingestion workers run it)."""
    from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder()
    embedder.embed_documents(texts[:4])
    began = time.perf_counter()
    embedder.embed_documents(texts)
    batched = len(texts) / (time.perf_counter() - began)
    parallel = session_comparison(texts, [], workers=workers, only_parallel=True)[f"{workers}_one_thread_sessions_docs_per_s"]
    return max(batched, parallel)


def session_comparison(texts: list[str], queries: list[str], workers: int = 2, *,
                       only_parallel: bool = False) -> dict[str, Any]:
    """Documents per second, one text per call as the embed step of a small document makes them,
    and query latency: one session using the default intra-op threads with onnxruntime's spinning
    on (its default) and off (the engine's setting), against 1-thread sessions called from
    ``workers`` threads at once (what the local ingestion workers do)."""
    from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

    def rate(embedder: OnnxMiniLMEmbedder, threads: int) -> float:
        embedder.embed_documents(texts[:2])
        queue = list(texts)
        lock = threading.Lock()

        def work() -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    text = queue.pop()
                embedder.embed_documents([text])

        began = time.perf_counter()
        pool = [threading.Thread(target=work) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return len(texts) / (time.perf_counter() - began)

    def query_ms(embedder: OnnxMiniLMEmbedder) -> tuple[float, float]:
        took = []
        for query in queries:
            began = time.perf_counter()
            embedder.embed_query(query)
            took.append((time.perf_counter() - began) * 1000)
        return round(pct(took, 0.5), 1), round(pct(took, 0.95), 1)

    out: dict[str, Any] = {}
    for label, spinning in () if only_parallel else (("spinning", True), ("no_spinning", False)):
        embedder = OnnxMiniLMEmbedder(spinning=spinning, query_cache_size=0)
        out[f"default_session_{label}_docs_per_s"] = round(rate(embedder, 1), 2)
        out[f"default_session_{label}_query_ms_p50_p95"] = query_ms(embedder)
    out[f"{workers}_one_thread_sessions_docs_per_s"] = round(rate(OnnxMiniLMEmbedder(threads=1, memory_arena=True), workers), 2)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dev_engine(extra_args: list[str]) -> Iterator[tuple[str, str]]:
    """`memory-engine dev` with a fresh home; yields (base URL, admin key)."""
    with tempfile.TemporaryDirectory(prefix="bench-ingest-corpus-") as home:
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env["MEMORY_ENGINE_HOME"] = home
        proc = subprocess.Popen([sys.executable, "-m", "memory_engine.cli", "dev", "--port", str(port), *extra_args],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            key = None
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.strip().startswith("me_"):
                    key = line.strip()
                if "ready at" in line:
                    break
            if key is None:
                raise RuntimeError("memory-engine dev did not start")
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep the pipe drained
            yield f"http://127.0.0.1:{port}", key
        finally:
            proc.terminate()
            proc.wait(timeout=60)


def post_all(client: Client, docs: list[dict[str, Any]], batch: int, clients: int) -> dict[str, dict[str, Any]]:
    """Create every document; returns path -> {id, action, error}."""
    outcome: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()
    size = max(1, batch)
    groups = [docs[i:i + size] for i in range(0, len(docs), size)]
    queue = list(reversed(groups))

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                group = queue.pop()
            bodies = [{"path": d["path"], "content": d["content"]} for d in group]
            if batch:
                status, body = client.call("POST", "/v1/documents/batch", {"documents": bodies})
                if status != 200:
                    raise RuntimeError(f"batch: {status} {str(body)[:300]}")
                answers = [{"id": (r.get("document") or {}).get("id"), "action": r["action"],
                            "error": (r.get("error") or {}).get("message")} for r in body["results"]]
            else:
                answers = []
                for item in bodies:
                    status, body = client.call("POST", "/v1/documents", item)
                    ok = status in (200, 201)
                    answers.append({"id": body.get("id") if ok else None, "action": "created" if ok else "rejected",
                                    "error": None if ok else body["error"]["message"]})
            with lock:
                for doc, answer in zip(group, answers, strict=True):
                    outcome[doc["path"]] = answer

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcome


def count(client: Client, status: str) -> int:
    total, cursor = 0, None
    while True:
        path = f"/v1/documents?status={status}&limit=100" + (f"&cursor={cursor}" if cursor else "")
        code, body = client.call("GET", path)
        if code != 200:
            raise RuntimeError(f"list: {code}")
        total += len(body["data"])
        cursor = body["next_cursor"]
        if not cursor:
            return total


def any_with(client: Client, status: str) -> bool:
    code, body = client.call("GET", f"/v1/documents?status={status}&limit=1")
    if code != 200:
        raise RuntimeError(f"list: {code}")
    return bool(body["data"])


def probe(client: Client, stop: threading.Event, health: list[float], search: list[float]) -> None:
    """One health check and one search every 0.5 s while the queue drains."""
    rng = random.Random(7)
    while not stop.wait(0.5):
        health.append(client.timed("GET", "/v1/health"))
        search.append(client.timed("POST", "/v1/knowledge/search", {"query": rng.choice(SEARCHES), "limit": 10}))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="the first N documents of the corpus")
    parser.add_argument("--batch", type=int, default=100, help="documents per POST /v1/documents/batch (0: one per request)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--broken", type=float, default=0.0, help="add this share of broken documents (empty, binary, oversized)")
    parser.add_argument("--model-sample", type=int, default=300, help="texts timed for the model's own throughput")
    parser.add_argument("--model-workers", type=int, default=os.cpu_count() or 2,
                        help="threads of one-thread sessions when timing the model (default: the cores)")
    parser.add_argument("--url", default=None)
    parser.add_argument("--key", default=os.environ.get("MEMORY_ENGINE_API_KEY"))
    parser.add_argument("--engine-args", default="", help="extra arguments for `memory-engine dev`")
    parser.add_argument("--sessions", action="store_true",
                        help="only compare one default model session with 1-thread sessions in parallel, and exit")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.corpus.exists():
        print(f"error: {args.corpus} not found", file=sys.stderr)
        return 2
    docs = load_corpus(args.corpus, args.limit)
    if args.sessions:
        queries = [f"what is known about {d['content'].splitlines()[0][:80]}" for d in docs[:100]]
        print(json.dumps(session_comparison([d["content"] for d in docs[: args.model_sample]], queries)))
        return 0
    broken = broken_documents(round(len(docs) * args.broken)) if args.broken else []
    everything: list[dict[str, Any]] = docs + broken
    random.Random(11).shuffle(everything)
    sample = [d["content"] for d in docs[: args.model_sample]]

    @contextmanager
    def target() -> Iterator[tuple[str, str]]:
        if args.url:
            yield args.url, args.key
        else:
            with dev_engine(args.engine_args.split()) as found:
                yield found

    with target() as (url, key):
        client = Client(url, key)
        model_rate = model_throughput(sample, args.model_workers)  # the engine is idle: nothing queued yet
        idle_health = [client.timed("GET", "/v1/health") for _ in range(5)]
        stop, health, search = threading.Event(), [], []  # type: ignore[var-annotated]
        prober = threading.Thread(target=probe, args=(client, stop, health, search), daemon=True)
        began = time.perf_counter()
        prober.start()
        outcome = post_all(client, everything, args.batch, args.clients)
        posted = time.perf_counter() - began
        accepted = sum(1 for o in outcome.values() if o["id"])
        # Polled with one one-row page a second: counting every processing document each time
        # (50 pages of 100 at the start) kept the API workers busy enough to slow ingestion itself.
        while any_with(client, "processing"):
            if sys.stderr.isatty():
                print(f"\r{accepted} accepted, draining for {time.perf_counter() - began:.0f} s", end="",
                      file=sys.stderr, flush=True)
            time.sleep(1)
        drained = time.perf_counter() - began
        stop.set()
        prober.join()
        ready, failed = count(client, "ready"), count(client, "failed")
        after = [client.timed("POST", "/v1/knowledge/search", {"query": q, "limit": 10}) for q in SEARCHES * 5]

    good_ready = sum(1 for d in docs if outcome[d["path"]]["action"] != "rejected")
    broken_rejected = {d["path"]: outcome[d["path"]]["error"] for d in broken if outcome[d["path"]]["action"] == "rejected"}
    result = {
        "documents": len(docs), "broken": len(broken), "accepted": accepted, "ready": ready, "failed": failed,
        "rejected_at_create": len(everything) - accepted, "broken_rejected_with_reason": len(broken_rejected),
        "good_documents_ready": good_ready == ready, "post_seconds": round(posted, 1),
        "drain_seconds": round(drained, 1), "engine_docs_per_s": round(ready / drained, 2),
        "model_docs_per_s": round(model_rate, 2), "ratio": round(ready / drained / model_rate, 3),
        "health_ms_idle_p50": round(statistics.median(idle_health), 1),
        "health_ms_draining_p50": round(pct(health, 0.5), 1), "health_ms_draining_max": round(max(health or [0]), 1),
        "search_ms_draining_p50": round(pct(search, 0.5), 1), "search_ms_draining_p95": round(pct(search, 0.95), 1),
        "search_ms_after_p50": round(pct(after, 0.5), 1), "search_ms_after_p95": round(pct(after, 0.95), 1),
        "batch": args.batch, "clients": args.clients,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"\ncorpus: {args.corpus.name}  documents: {len(docs)} (+{len(broken)} broken)  batch: {args.batch}  "
          f"clients: {args.clients}")
    print(f"model alone:  {model_rate:.1f} docs/s (sample of {len(sample)}, this process, engine idle; the better of "
          f"batches of 32 on one session and {args.model_workers} one-thread sessions in parallel)")
    print(f"engine:       {result['engine_docs_per_s']} docs/s ({ready} ready in {drained:.0f} s; all posted in "
          f"{posted:.0f} s) = {100 * result['ratio']:.0f} % of the model")
    print(f"health:       idle p50 {result['health_ms_idle_p50']} ms; while draining p50 "
          f"{result['health_ms_draining_p50']} ms, max {result['health_ms_draining_max']} ms")
    print(f"search:       while draining p50/p95 {result['search_ms_draining_p50']}/{result['search_ms_draining_p95']} ms;"
          f" after p50/p95 {result['search_ms_after_p50']}/{result['search_ms_after_p95']} ms")
    if broken:
        print(f"broken:       {len(broken_rejected)}/{len(broken)} rejected at create with a reason; "
              f"{failed} failed in ingestion")
        for path, reason in sorted(broken_rejected.items())[:3]:
            print(f"  {path}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
