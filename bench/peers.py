"""memory-engine side by side with the peers users would pick instead.

Loads the same data into every system, on ONE embedded PostgreSQL server (one database per system
and data set), with ONE local embedding model (all-MiniLM-L6-v2 int8) plugged into every system that
takes a custom embedder, runs the same queries and prints one Markdown table per data set.

    .venv/bin/pip install -e '.[peers]'          # or: make bench-peers
    .venv/bin/python bench/peers.py [--datasets locomo,scifact] [--systems ...]
                                    [--limit-units N --limit-queries N] [--json out.json]

How it measures (docs/benchmarks.md has the why):
- every text any system will embed is embedded ONCE up front, in this process, with the model
  (cached on disk under ``--cache-dir``); that one-off model time is reported on its own line;
- each system then runs in its own child process, one after another (never in parallel: the machine
  has 2 cores), and is given an embedder that serves those cached vectors, so its load time and search
  latency are system time; where the system takes a precomputed query vector it gets one;
- a child that asks for a text nobody predicted still gets a correct vector (the model is loaded in
  the child, the time is subtracted and the table says so);
- peak RSS is ``ru_maxrss`` of the child; the shared PostgreSQL server is not in it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/peer_systems, when run as a script or loaded by path

from peer_systems import SYSTEMS
from peer_systems.base import (
    DEFAULT_DATA,
    REPO,
    VERSIONED,
    K,
    UpFrontEmbeddings,
    VectorCache,
    analyze,
    load_dataset,
    log,
    peak_rss_mb,
    percentile,
    ranking_metrics,
)


def run_child(args: argparse.Namespace) -> int:
    import warnings

    from memory_engine.evaluation.metrics import MetricTable

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    ds = load_dataset(args.dataset, args)
    work = Path(args.work)
    cache = VectorCache(work, ds.name, args.cache_dir)
    home = work / f"home-{args.child}-{ds.name}"
    home.mkdir(parents=True, exist_ok=True)
    system = SYSTEMS[args.child](args.db_url, home, cache)
    system.documents = args.me_documents
    system.setup(ds)
    log(f"{ds.name}/{args.child}: loading {len(ds.units)} units")
    started, missed = time.perf_counter(), cache.miss_seconds
    system.load(ds)
    load_seconds = time.perf_counter() - started - (cache.miss_seconds - missed)
    if system.uses_postgres:
        analyze(args.db_url)
    rows = []
    for row in system.rows:
        system.search(row, ds.queries[0])  # warm-up (lazy imports, prepared statements); not counted
        table = MetricTable(("R@5", "R@10", "MRR", "nDCG@10"))
        latencies, returned = [], []
        for query in ds.queries:
            started, missed = time.perf_counter(), cache.miss_seconds
            ranked = system.search(row, query)[:K]
            latencies.append((time.perf_counter() - started - (cache.miss_seconds - missed)) * 1000)
            returned.append(len(ranked))
            table.add(row, ("overall", query.category), **ranking_metrics(ranked, query))
        rows.append({
            "row": row, "system": args.child, "queries": len(ds.queries), "units": len(ds.units),
            "metrics": {m: table.mean(row, "overall", m) for m in table.metrics},
            "by_category": {g: {m: table.mean(row, g, m) for m in table.metrics} for g in table.groups() if g != "overall"},
            "results_per_query": statistics.fmean(returned), "load_seconds": load_seconds,
            "load_units_per_s": len(ds.units) / load_seconds if load_seconds > 0 else float("nan"),
            "p50_ms": percentile(latencies, 0.50), "p95_ms": percentile(latencies, 0.95),
        })
        log(f"{ds.name}/{row}: R@10 {rows[-1]['metrics']['R@10']:.3f}, p50 {rows[-1]['p50_ms']:.1f} ms")
    system.close()
    rss_mb = peak_rss_mb()
    for r in rows:
        r.update(peak_rss_mb=rss_mb, model_misses=len(cache.missed), notes=system.notes)
    (work / f"result-{args.child}-{ds.name}.json").write_text(json.dumps(rows, indent=1), "utf-8")
    (work / f"missed-{args.child}-{ds.name}.json").write_text(json.dumps(cache.missed), "utf-8")
    return 0


# ----------------------------------------------------------------------------- the run
def versions(server_uri: str) -> dict[str, str]:
    import psycopg

    out: dict[str, str] = {}
    for name in VERSIONED:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[name] = importlib.metadata.version(name)
    with psycopg.connect(server_uri, autocommit=True) as conn:
        out["PostgreSQL (server)"] = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        row = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        out["pgvector (extension)"] = row[0] if row else "missing"
    out["python"] = sys.version.split()[0]
    return out


@contextlib.contextmanager
def embedded_server(work: Path) -> Iterator[Any]:
    from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres

    server = EmbeddedPostgres(work / "pgdata")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def create_database(server: Any, name: str) -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return str(server.uri(name))


def child_argv(args: argparse.Namespace, system: str, dataset: str, db_url: str, work: Path) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", system, "--dataset", dataset, "--work", str(work),
            "--db-url", db_url, "--cache-dir", str(args.cache_dir), "--locomo", str(args.locomo), "--scifact", str(args.scifact),
            "--split", args.split]
    if args.limit_units is not None:
        argv += ["--limit-units", str(args.limit_units)]
    if args.limit_queries is not None:
        argv += ["--limit-queries", str(args.limit_queries)]
    argv += ["--me-documents", args.me_documents]
    return argv


def child_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(MEM0_TELEMETRY="false", MEM0_DIR=str(work / "mem0"), POWERTOOLS_TRACE_DISABLED="true",
               POWERTOOLS_METRICS_DISABLED="true", TOKENIZERS_PARALLELISM="false")
    # the children import memory_engine from the tree this script lives in (a checkout or an export)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "layers" / "core"), str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def run_system(args: argparse.Namespace, server: Any, embeddings: UpFrontEmbeddings, key: str, dataset: str,
               work: Path) -> list[dict[str, Any]]:
    """One child process for one system on one data set (a second one, on a fresh database, when the
    first had to embed texts itself: the rows must not include the model). Rows, or one error row each."""
    for attempt in (1, 2):
        db_url = create_database(server, f"peers_{key.replace('-', '_')}_{dataset}")
        again = " (again: the texts it embedded itself are precomputed now)" if attempt > 1 else ""
        log(f"{dataset}/{key}: child process{again}")
        proc = subprocess.run(child_argv(args, key, dataset, db_url, work), env=child_env(work), stdout=sys.stderr, check=False)
        out, failure = work / f"result-{key}-{dataset}.json", work / f"error-{key}-{dataset}.txt"
        if proc.returncode != 0 or not out.exists():
            reason = failure.read_text("utf-8") if failure.exists() else f"exit status {proc.returncode}"
            log(f"{dataset}/{key}: FAILED ({reason})")
            return [{"row": row, "system": key, "error": reason} for row in SYSTEMS[key].rows]
        missed = json.loads((work / f"missed-{key}-{dataset}.json").read_text("utf-8"))
        if not missed or attempt == 2:
            return list(json.loads(out.read_text("utf-8")))
        log(f"{dataset}/{key}: embedded {len(missed)} texts nobody predicted, e.g. {missed[0][:80]!r}; learning them")
        embeddings.learn(dataset, missed)
    raise AssertionError("unreachable")


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}; known: {', '.join(SYSTEMS)}")
    with tempfile.TemporaryDirectory(prefix="memory-engine-peers-") as tmp, scoped_env(
        MEM0_TELEMETRY="false", MEM0_DIR=str(Path(tmp) / "mem0")  # Mem0 is imported here to predict its texts
    ):
        work = Path(tmp)
        datasets = [load_dataset(name, args) for name in names]
        for ds in datasets:
            log(f"{ds.name}: {len(ds.units)} units, {len(ds.queries)} queries, {len(ds.groups())} search scopes")
        embeddings = UpFrontEmbeddings(work, args.cache_dir)
        for ds in datasets:
            embeddings.prepare(ds, [SYSTEMS[key] for key in systems])
        results: dict[str, list[dict[str, Any]]] = {}
        with embedded_server(work) as server:
            report_versions = versions(server.uri("postgres"))
            for ds in datasets:
                results[ds.name] = []
                for key in systems:
                    results[ds.name] += run_system(args, server, embeddings, key, ds.name, work)
    return {"embedding": embeddings.report, "results": results, "versions": report_versions,
            "seconds": round(time.perf_counter() - started, 1), "machine": machine()}


@contextlib.contextmanager
def scoped_env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def machine() -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end of the run"


def render(report: dict[str, Any], args: argparse.Namespace) -> str:
    lines: list[str] = []
    for name, rows in report["results"].items():
        metrics = ["R@5", "R@10", "MRR"] + (["nDCG@10"] if name == "scifact" else [])
        emb = report["embedding"][name]
        first = next((r for r in rows if "error" not in r), None)
        size = f"{first['units']} units, {first['queries']} queries" if first else ""
        lines += [f"### {name} ({size})", ""]
        header = ["system", *metrics, "results/query", "load units/s", "load s", "search p50 ms", "search p95 ms", "peak RSS MB"]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['row']} | did not run: {r['error']} |")
                continue
            flag = " *" if r.get("model_misses") else ""
            bulk = " †" if any("bulk insert" in n for n in r.get("notes", [])) else ""
            cells = [f"{r['metrics'][m]:.3f}" for m in metrics] + [
                f"{r['results_per_query']:.1f}", f"{r['load_units_per_s']:.0f}{bulk}", f"{r['load_seconds']:.1f}",
                f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}", f"{r['peak_rss_mb']:.0f}",
            ]
            lines.append(f"| {r['row']}{flag} | " + " | ".join(cells) + " |")
        lines += ["", f"Embedding, once, before any system ran ({emb['model']}): {emb['texts']} distinct texts, "
                      f"{emb['computed']} computed by the model in {emb['seconds']:.1f} s, the rest from the disk cache.", ""]
        if any("bulk insert" in n for r in rows for n in r.get("notes", [])):
            lines += ["† loaded with the evaluation harness's bulk insert (rows straight into the schema, no ingestion "
                      "pipeline; the HTTP row loads the same way and only searches over HTTP), not an API: "
                      "`--me-documents api` loads through the ingestion API instead.", ""]
        if any(r.get("model_misses") for r in rows):
            lines += ["\\* the child embedded texts nobody precomputed (model loaded in the child: its RSS includes the model; "
                      "model time is subtracted from load and latency).", ""]
    lines += ["Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()), "",
              f"Machine: {report['machine']}. Took {report['seconds']:.0f} s."]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    home = Path(os.environ.get("MEMORY_ENGINE_HOME", ".memory-engine"))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("--datasets", default="locomo,scifact")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, of: {', '.join(SYSTEMS)}")
    p.add_argument("--locomo", type=Path, default=DEFAULT_DATA / "locomo" / "locomo_dev5.json")
    p.add_argument("--scifact", type=Path, default=DEFAULT_DATA / "scifact")
    p.add_argument("--split", default="train", help="SciFact qrels split")
    p.add_argument("--limit-units", type=int, default=None, help="load at most N units per data set (a bounded smoke run)")
    p.add_argument("--limit-queries", type=int, default=None, help="run at most N queries per data set")
    p.add_argument("--cache-dir", type=Path, default=home / "eval-cache",
                   help="embedding cache (default $MEMORY_ENGINE_HOME/eval-cache)")
    p.add_argument("--me-documents", choices=("bulk", "api"), default="bulk",
                   help="how memory-engine loads SciFact: the harness's bulk insert, or the ingestion API per document")
    p.add_argument("--json", type=Path, default=None, help="also write every number (and per-category LoCoMo means) here")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--dataset", default=None, help=argparse.SUPPRESS)
    p.add_argument("--work", default=None, help=argparse.SUPPRESS)
    p.add_argument("--db-url", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, *, out: Callable[[str], Any] = print) -> dict[str, Any]:
    args = parse_args(argv)
    if args.child:
        try:
            raise SystemExit(run_child(args))
        except Exception as exc:  # the parent reports the reason in the row and carries on
            Path(args.work, f"error-{args.child}-{args.dataset}.txt").write_text(f"{type(exc).__name__}: {exc}"[:300], "utf-8")
            raise
    report = run_all(args)
    out(render(report, args))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str), "utf-8")
    return report


if __name__ == "__main__":
    sys.path[:0] = [str(REPO / "layers" / "core"), str(REPO)]
    main()
