"""Fitting the score's models (evaluation/calibration.py): every evidence feature, ``dated`` included,
reaches the fitted model in its place."""

from __future__ import annotations

import random

from memory_engine.domain.relevance import Evidence
from memory_engine.evaluation import calibration as cal
from memory_engine.evaluation.scored import ScoredQuery


def _queries(seed: int = 7) -> list[ScoredQuery]:
    # rows relevant mostly when on the named date, a little more often with a higher cosine
    rng = random.Random(seed)
    rows = []
    for _ in range(4000):
        cos, cov, dated = rng.random(), rng.random(), rng.random() < 0.3
        p = 0.6 if dated else 0.05
        relevant = rng.random() < p + 0.1 * cos
        rows.append((Evidence(cos, cov, dated), 0.0, frozenset({"x"}) if relevant else frozenset()))
    return [ScoredQuery("synthetic", frozenset({"x"}), rows)]


def test_the_fit_reads_the_dated_feature_and_maps_it_to_the_model() -> None:
    queries = _queries()
    for features in (cal.both, cal.cosine_only, cal.coverage_only):
        coefficients = cal.fit(queries, features)
        model = cal.as_logistic(coefficients, features)
        # the date weighs most (0.6 against 0.05 relevant: about +3 in the logit)
        assert 2.0 < model.dated < 4.0, features.__name__
        assert model.dated == coefficients[-1]
        assert model(0.5, 0.5, True) > 0.5 > model(0.5, 0.5, False)
