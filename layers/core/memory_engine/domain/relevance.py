"""The ``score`` of a search result (pure): a calibrated estimate, in 0..1, that the row is relevant
to the query, read from absolute evidence rather than from the row's place in its lists.

The fused ranking (domain/fusion.py) divides each signal by its list's best score, so the top row
of *any* query looks strong there, even one no stored row relates to. The score here reads what
does not depend on the list:

- ``cosine``: the row's cosine to the query (the embedding model's own scale);
- ``coverage``: the row's BM25 over the most BM25 the query could reach in this scope,
  ``bm25 / (Σ idf(t) · (k1 + 1))`` over *every* query lexeme, those no row of the scope contains
  counted at their (highest) idf: a row that matches the query's rare words scores near its share
  of them, a query whose words are absent from the scope scores 0;
- ``dated``: whether the row's time (``valid_from``) falls on a date or in a period the query names
  ("on 9 November, 2022", "in October 2023"; domain/query_text.date_mentions). A conversation turn
  does not hold its session's date in its text, so without it a question naming a date reads its
  date words as missed (they count in coverage's denominator at the highest idf) and the row that
  answers it scores like an unrelated one (most of the answered LoCoMo questions a floor would
  empty were such questions).

and maps them through a logistic model, ``p = 1 / (1 + exp(-(a + b·cosine + c·coverage + d·dated)))``:
the chance that a row with this evidence is relevant. Its coefficients are the maximum-likelihood fit
over every row of the first 10 of the development sets' positive and negative queries together
(LoCoMo dev5 and SciFact train, ``memory-engine eval negatives --fit``, the "locomo + scifact"
fit: 28,520 rows, 5 % relevant), rounded to two digits; fitted on either set alone they differ
(SciFact names no dates, so its own fit leaves ``dated`` at 0; the data, the fits on one set
checked on the other, held-out LoCoMo conversations, and what the floor costs are in
docs/retrieval.md, "Score and relevance floor"). When a signal did not run (``vector_only``,
``keyword_only``, a query that could not be embedded, a strict keyword query, quoted phrase or
operators, that matched no row: domain/fusion.evidence), the model of the other signal alone is
used. The cosine's scale is the embedding model's: the coefficients were fitted with the local
all-MiniLM-L6-v2.

Scores follow the ranking: a page's score never rises down the page (:func:`along_ranking` gives
each row the best estimate at or below it: the ranking says it is at least as relevant as those).
Which rows a page keeps (:func:`kept`): with ``min_score`` given, the rows scoring at least that
(``0``: the whole ranking); without it, the default relevance floor :data:`DEFAULT_MIN_SCORE` gates
the *page*: nothing when its best row scores under the floor (nothing stored relates to the
query), else the whole page. A row-by-row cut at the default would drop the lower rows of answered
queries (each of those is relevant with a few per cent chance, like the best row of an unanswered
one) and cost recall: on LoCoMo dev5 a row cut at 0.1 dropped recall@10 by 0.15.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

#: BM25's ``k1`` (adapters/postgres/bm25.py): a lexeme's contribution tends to ``idf · (k1 + 1)``.
BM25_K1: Final = 1.2


@dataclass(frozen=True)
class Evidence:
    """What a row's score is read from; ``None`` where that signal did not run."""

    cosine: float | None
    coverage: float | None
    #: The row's time falls on a date the query names (False when it names none).
    dated: bool = False


@dataclass(frozen=True)
class Logistic:
    """``1 / (1 + exp(-(intercept + cosine·x_cos + coverage·x_cov + dated·x_dated)))``."""

    intercept: float
    cosine: float = 0.0
    coverage: float = 0.0
    dated: float = 0.0

    def __call__(self, cosine: float, coverage: float, dated: bool = False) -> float:
        z = self.intercept + self.cosine * cosine + self.coverage * coverage + (self.dated if dated else 0.0)
        return 1.0 / (1.0 + math.exp(-z)) if z > -500 else 0.0


#: Fitted on LoCoMo dev5 and SciFact train together (see the module docstring; the fit read
#: ``(-7.11, 5.80, 6.20, 1.99)``, ``(-7.26, 9.16, 0.89)``, ``(-4.98, 8.72, 2.22)``); both signals ...
BOTH: Final = Logistic(-7.1, 5.8, 6.2, 2.0)
#: ... the vector signal alone ...
COSINE_ONLY: Final = Logistic(-7.3, 9.2, 0.0, 0.89)
#: ... the keyword signal alone.
COVERAGE_ONLY: Final = Logistic(-5.0, 0.0, 8.7, 2.2)

#: The default relevance floor: a page whose best row is estimated less than 2 % likely to be
#: relevant is empty (a row of the first 10 is relevant 5 % of the time on the development sets).
#: Chosen on them as the round value where LoCoMo's unrelated queries mostly return nothing at a
#: recall cost of about 0.03 (docs/retrieval.md); a higher floor empties more and costs more.
DEFAULT_MIN_SCORE: Final = 0.02


def coverage(bm25: float, idf_total: float) -> float:
    """A row's BM25 as a share of the most the query's lexemes could give (0..1)."""
    if idf_total <= 0 or bm25 <= 0:
        return 0.0
    return min(1.0, bm25 / (idf_total * (BM25_K1 + 1)))


def relevance(evidence: Evidence) -> float:
    """The calibrated estimate for one row (0 when neither signal ran)."""
    cos, cov, dated = evidence.cosine, evidence.coverage, evidence.dated
    if cos is not None and cov is not None:
        return BOTH(cos, cov, dated)
    if cos is not None:
        return COSINE_ONLY(cos, 0.0, dated)
    if cov is not None:
        return COVERAGE_ONLY(0.0, cov, dated)
    return 0.0


def along_ranking(estimates: Sequence[float]) -> list[float]:
    """Scores for rows in ranked order: each row's the best estimate at or below it, so scores
    never rise down the ranking and a cut at a floor keeps every row above the last that passes."""
    out = list(estimates)
    best = 0.0
    for i in range(len(out) - 1, -1, -1):
        best = max(best, out[i])
        out[i] = best
    return out


def kept(scores: Sequence[float], min_score: float | None, *, default_floor: bool = True) -> int:
    """How many rows of a page scored along the ranking (:func:`along_ranking`) are returned: with
    ``min_score``, those scoring at least it; without, all of them when the first reaches
    :data:`DEFAULT_MIN_SCORE` (or ``default_floor`` is off), else none.

    The search turns the default floor off for a page holding document chunks: a name or an identifier
    asked for alone, found verbatim in a document, scores under it (every query word matched once is
    coverage ``1 / (k1 + 1)``, and the model gives a bare name next to no cosine to a page of text: a
    name in an .odt chunk scored 0.014, tests/integration/test_formats_ingestion.py), and the
    development sets hold no such queries to fit that evidence on (docs/retrieval.md).
    ``min_score`` given applies to every row."""
    if min_score is None:
        if not default_floor:
            return len(scores)
        return len(scores) if scores and scores[0] >= DEFAULT_MIN_SCORE else 0
    return sum(1 for score in scores if score >= min_score)
