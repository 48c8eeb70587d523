"""`memory-engine eval negatives`: the negatives report (evaluation/scored.py) over LoCoMo and
SciFact, the scored rows dumped for offline analysis, and with ``--fit`` the score's models fitted
on each data set and checked on the others (evaluation/calibration.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_engine.bootstrap import Container
from memory_engine.domain.relevance import Evidence
from memory_engine.evaluation.scored import NegativesReport, ScoredQuery


def run(container: Container, args: Any) -> str:
    """``memory-engine eval negatives``: the report over LoCoMo and SciFact (and, with ``--fit``,
    each data set's fitted models checked on the other)."""
    from memory_engine.evaluation import beir, locomo

    by_set: dict[str, list[ScoredQuery]] = {}
    if args.locomo:
        conversations = locomo.load(args.locomo, max_conversations=args.conversations)
        by_set["locomo"] = locomo.negatives(container, conversations, max_questions=args.questions)
    if args.scifact:
        data = beir.load(args.scifact, split=args.split, max_queries=args.queries, max_docs=args.docs)
        by_set["scifact"] = beir.negatives(container, data)
    report = NegativesReport()
    for name, queries in by_set.items():
        report.add(name, queries)
    if getattr(args, "dump", None):
        dump(by_set, args.dump)
    out = [report.render()]
    if getattr(args, "fit", False):
        out.append(fitted(by_set))
    return "\n".join(out)


def dump(by_set: dict[str, list[ScoredQuery]], path: Any) -> None:
    """Every scored row as JSON lines, ``{dataset, positive, rows: [[cosine, coverage, estimate,
    relevant, dated]]}``: the data the calibration is fitted and checked on, for offline analysis."""
    import json

    with open(path, "w", encoding="utf-8") as out:
        for queries in by_set.values():
            for q in queries:
                rows = [[e.cosine, e.coverage, estimate, bool(labels & q.relevant), e.dated] for e, estimate, labels in q.rows]
                out.write(json.dumps({"dataset": q.dataset, "positive": q.positive, "rows": rows}) + "\n")


def rescored(queries: Sequence[ScoredQuery], model: Any) -> list[ScoredQuery]:
    """The same rows with their estimates from ``model`` (an ``Evidence -> float``)."""
    return [ScoredQuery(q.dataset, q.relevant, [(e, model(e), labels) for e, _, labels in q.rows]) for q in queries]


def fitted(by_set: dict[str, list[ScoredQuery]]) -> str:
    """Each data set's models fitted on its rows (and on all of them together), and the report of
    every data set under them."""
    from memory_engine.domain.relevance import relevance
    from memory_engine.evaluation import calibration as cal

    out = []
    fits = dict(by_set)
    if len(by_set) > 1:  # the shipped models are fitted on every data set together
        fits[" + ".join(by_set)] = [q for queries in by_set.values() for q in queries]
    for name, queries in fits.items():
        models = {f.__name__: cal.as_logistic(cal.fit(queries, f), f) for f in (cal.both, cal.cosine_only, cal.coverage_only)}
        out.append(f"\nfitted on {name}: " + "; ".join(f"{k} {v}" for k, v in models.items()))

        def model(e: Evidence, m: dict[str, Any] = models) -> float:
            if e.cosine is not None and e.coverage is not None:
                return float(m["both"](e.cosine, e.coverage, e.dated))
            if e.cosine is not None:
                return float(m["cosine_only"](e.cosine, 0.0, e.dated))
            return float(m["coverage_only"](0.0, e.coverage, e.dated)) if e.coverage is not None else 0.0

        report = NegativesReport()
        for other, rows in by_set.items():
            report.add(f"{other} (models of {name})", rescored(rows, model))
            bins = cal.reliability(rows, model)
            out.append(f"  reliability on {other}: " + ", ".join(f"{p:.2f}->{y:.2f} ({n})" for p, y, n in bins[:-1])
                       + f"; log loss {bins[-1][0]:.3f} (base rate {bins[-1][1]:.3f}, {bins[-1][2]} rows)")
        out.append(report.render())
    out.append("\nshipped models (domain/relevance.py) reliability: " + "; ".join(
        f"{name}: " + ", ".join(f"{p:.2f}->{y:.2f} ({n})" for p, y, n in cal.reliability(rows, relevance)[:-1])
        for name, rows in by_set.items()))
    return "\n".join(out)
