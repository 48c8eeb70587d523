"""Fitting the score's logistic models (domain/relevance.py) on scored rows, and checking them.

``fit`` is maximum likelihood (Newton's method, a tiny ridge for stability) over rows labelled
relevant or not: the first 10 rows of the ranking of each positive and negative query
(evaluation/scored.py). Fit on one data set, ``reliability`` checks the fitted model on another:
predicted against observed relevance per bin of the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from memory_engine.domain.relevance import Evidence, Logistic
from memory_engine.evaluation.scored import ScoredQuery

Features = Callable[[Evidence], list[float] | None]


def both(e: Evidence) -> list[float] | None:
    return None if e.cosine is None or e.coverage is None else [e.cosine, e.coverage, float(e.dated)]


def cosine_only(e: Evidence) -> list[float] | None:
    return None if e.cosine is None else [e.cosine, float(e.dated)]


def coverage_only(e: Evidence) -> list[float] | None:
    return None if e.coverage is None else [e.coverage, float(e.dated)]


def _data(queries: Sequence[ScoredQuery], features: Features) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for q in queries:
        for evidence, _, labels in q.rows:
            x = features(evidence)
            if x is not None:
                xs.append([1.0, *x])
                ys.append(1.0 if labels & q.relevant else 0.0)
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def fit(queries: Sequence[ScoredQuery], features: Features, *, ridge: float = 1e-3, steps: int = 50) -> list[float]:
    """The logistic coefficients ``[intercept, *features]`` of maximum (ridge-penalized) likelihood."""
    x, y = _data(queries, features)
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + ridge * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + ridge * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return [float(v) for v in w]


def as_logistic(coefficients: Sequence[float], features: Features) -> Logistic:
    if features is both:
        return Logistic(coefficients[0], coefficients[1], coefficients[2], coefficients[3])
    if features is cosine_only:
        return Logistic(coefficients[0], coefficients[1], 0.0, coefficients[2])
    return Logistic(coefficients[0], 0.0, coefficients[1], coefficients[2])


def reliability(
    queries: Sequence[ScoredQuery], model: Callable[[Evidence], float], bins: int = 5,
) -> list[tuple[float, float, int]]:
    """``(mean estimate, share relevant, rows)`` per bin of the estimate (equal-width bins of 0..1),
    and the log loss over all rows last as ``(log loss, base rate, rows)``."""
    cells: list[list[tuple[float, float]]] = [[] for _ in range(bins)]
    loss, count, positives = 0.0, 0, 0.0
    for q in queries:
        for evidence, _, labels in q.rows:
            p = model(evidence)
            y = 1.0 if labels & q.relevant else 0.0
            cells[min(bins - 1, int(p * bins))].append((p, y))
            eps = min(max(p, 1e-9), 1 - 1e-9)
            loss -= y * math.log(eps) + (1 - y) * math.log(1 - eps)
            count += 1
            positives += y
    out = [(sum(p for p, _ in c) / len(c), sum(y for _, y in c) / len(c), len(c)) for c in cells if c]
    out.append((loss / max(count, 1), positives / max(count, 1), count))
    return out
