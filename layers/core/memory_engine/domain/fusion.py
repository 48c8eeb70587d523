"""Score fusion of search v2 (pure): a convex combination of normalized signal scores, query
features, and the context of neighbouring rows.

For each candidate row (the union of every signal's list, plus the conversation or document
neighbours of the best of them):

    signals = w_vector  * cosine / max                      over this source's vector list
            + w_keyword * bm25 / max                        over this source's keyword list
            + w_list    * (1 - 0.5 * (rank - 1) / len)      for rank-only lists (entity, date, recency)
    base    = signals
            + subject_boost  if its subject entity is named in the query ("what did Caroline ...")
            + date_boost     if its valid_from falls on a date the query names ("on 8 May, 2023")
    score   = base + neighbour_weight * max over rows d <= window steps away of decay^(d-1) * signals(row)

A neighbour lends its signals, not its boosts: who a row is about and when it happened are its
own (a neighbour that shares them has its own boost), so the other speaker's reply to a turn about
Caroline is not lifted by Caroline's name.

Why a convex combination and not RRF: RRF sees ranks only, so a keyword list whose tenth row
barely matches weighs as much as one whose tenth row matches every term; normalized scores keep
that difference (Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", 2023,
find a convex combination with min-max normalization beats RRF and needs few examples to set).
Why neighbours: a turn of a conversation ("Yes, last Tuesday!") or a chunk of a document often
answers what its neighbour asked; a row next to a strong match is likelier to be relevant.

The weights are typed fields of :class:`memory_engine.domain.search_config.SearchConfig`
(docs/retrieval.md says how they were chosen).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from memory_engine.domain.query_text import DateMention
from memory_engine.domain.relevance import Evidence, coverage
from memory_engine.domain.search_config import SearchConfig, Signal
from memory_engine.domain.search_models import Candidate, ListKey, RankedLists, ResultKey


@dataclass(frozen=True)
class Scored:
    key: ResultKey
    score: float
    ranks: dict[ListKey, int] = field(default_factory=dict)


def _clamp(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def _scale(list_scores: Sequence[float]) -> float:
    """What a raw score of a scored signal (cosine, BM25) is divided by to fall into 0..1 (clamped):
    the list's best score, counted from the signal's theoretical floor 0 (BM25's, and cosine's for
    anything related to the query at all), not from the list's minimum; 0 or less means "no row
    is related".

    Why not min-max: the minimum is wherever the list happened to stop (its depth), so min-max
    stretches the gap between the first and the thirtieth row to the whole 0..1 whatever it was,
    and a vector list of near-equal cosines outweighs a keyword list with one clear winner. The
    theoretical minimum keeps each list's own spread (Bruch et al. 2023's "TMM": on par with or
    better than min-max; here +0.011 R@10 on LoCoMo dev, docs/retrieval.md)."""
    return max(list_scores, default=0.0)


def _normalized(value: float, scale: float) -> float:
    return 1.0 if scale <= 0 else _clamp(value / scale)


def _rank_score(rank: int, length: int) -> float:
    """A rank-only list's score: 1 for its first row down to 0.5 for its last."""
    return 1.0 - 0.5 * (rank - 1) / max(length, 1)


def signal_scores(ranked: RankedLists, candidates: Mapping[ResultKey, Candidate], config: SearchConfig) -> dict[ResultKey, float]:
    """The weighted sum of every signal's normalized score, per candidate."""
    out = dict.fromkeys(candidates, 0.0)
    of_source: dict[str, list[tuple[ResultKey, Candidate]]] = {}
    for key, cand in candidates.items():
        of_source.setdefault(key[0], []).append((key, cand))
    for name, keys in ranked.lists.items():
        source, signal = name
        weight = config.weight(signal)
        if weight == 0.0 or not keys:
            continue
        if signal in (Signal.VECTOR, Signal.KEYWORD):
            scale = _scale(ranked.scores.get(name, []))
            if scale <= 0:
                continue  # no row matched a word, or none is related to the query: nothing to add
            for key, cand in of_source.get(source, ()):
                raw = cand.similarity if signal is Signal.VECTOR else (cand.bm25 or None)
                if raw is not None:
                    out[key] += weight * _normalized(raw, scale)
        else:  # rank-only lists: entity anchors, recency
            for rank, key in enumerate(keys, start=1):
                if key in out:
                    out[key] += weight * _rank_score(rank, len(keys))
    return out


def names_subject(candidate: Candidate, names: Collection[str]) -> bool:
    """True when the row is a fact whose subject entity is named in the query."""
    return bool(names) and any(subject in names for subject in candidate.subjects)


def on_named_date(candidate: Candidate, dates: Sequence[DateMention]) -> bool:
    return any(d.matches(candidate.valid_from) for d in dates)


def recency(candidates: Mapping[ResultKey, Candidate]) -> dict[ResultKey, float]:
    """Each dated candidate's place among the dated candidates by ``valid_from``, 0 (earliest) to 1
    (latest); equal dates share a place. Undated rows (chunks, facts without a date) get nothing."""
    dated = sorted({c.valid_from for c in candidates.values() if c.valid_from is not None})
    if len(dated) < 2:
        return {}
    place = {when: i / (len(dated) - 1) for i, when in enumerate(dated)}
    return {key: place[c.valid_from] for key, c in candidates.items() if c.valid_from is not None}


def neighbours(candidates: Mapping[ResultKey, Candidate], window: int) -> dict[ResultKey, list[tuple[ResultKey, int]]]:
    """Each candidate's candidate neighbours with their distance, from the ``previous`` links
    (both directions)."""
    out: dict[ResultKey, list[tuple[ResultKey, int]]] = {key: [] for key in candidates}
    for key, cand in candidates.items():
        for distance, before in enumerate(cand.previous[:window], start=1):
            if before in out:
                out[key].append((before, distance))
                out[before].append((key, distance))
    return out


def fuse(
    ranked: RankedLists, candidates: Mapping[ResultKey, Candidate], config: SearchConfig, *,
    names: Collection[str] = (), dates: Sequence[DateMention] = (),
) -> list[Scored]:
    """Every candidate scored as the module docstring says, best first. Ties break by how many
    lists have the row, then its best rank, then its key (deterministic)."""
    evidence = signal_scores(ranked, candidates, config)
    final = dict(evidence)
    for key, cand in candidates.items():
        if config.subject_boost and names_subject(cand, names):
            final[key] += config.subject_boost
        if config.date_boost and on_named_date(cand, dates):
            final[key] += config.date_boost
    if config.recency_weight > 0:
        for key, share in recency(candidates).items():
            final[key] += config.recency_weight * share
    if config.neighbour_weight > 0 and config.neighbour_window > 0:
        # a neighbour lends what the signals found in it, not its query features: who a row is
        # about and when it happened are its own; a neighbour sharing them gets its own boost
        for key, near in neighbours(candidates, config.neighbour_window).items():
            if near:
                best = max(evidence[other] * config.neighbour_decay ** (distance - 1) for other, distance in near)
                final[key] += config.neighbour_weight * best
    ranks: dict[ResultKey, dict[ListKey, int]] = {key: {} for key in candidates}
    for name, keys in ranked.lists.items():
        for rank, key in enumerate(keys, start=1):
            if key in ranks:
                ranks[key].setdefault(name, rank)
    return sorted(
        (Scored(key, final[key], ranks[key]) for key in candidates),
        key=lambda s: (-s.score, -len(s.ranks), min(s.ranks.values(), default=10**9), s.key),
    )


def within_reach(
    candidates: Mapping[ResultKey, Candidate], ranked: RankedLists, top: Collection[ResultKey], window: int
) -> dict[ResultKey, Candidate]:
    """The candidates a read of the listed rows and of the neighbours of ``top`` only would have
    found: every listed row, and a row not listed only when it is within ``window`` steps of a row
    of ``top`` (before it: in that row's ``previous``; after it: that row in its own). A read that
    expanded each source's own best rows found a superset."""
    listed = {key for keys in ranked.lists.values() for key in keys}
    tops = set(top)
    near = {before for key in tops if key in candidates for before in candidates[key].previous[:window]}
    return {
        key: cand for key, cand in candidates.items()
        if key in listed or key in near or any(before in tops for before in cand.previous[:window])
    }


def top_keys(ranked: RankedLists, config: SearchConfig, count: int) -> list[ResultKey]:
    """A cheap first ordering of the listed keys (before rows are read), to pick whose neighbours
    to read: the same weights over the list scores alone."""
    pre: dict[ResultKey, float] = {}
    for name, keys in ranked.lists.items():
        signal = name[1]
        weight = config.weight(signal)
        scores = ranked.scores.get(name)
        if scores:
            scale = _scale(scores)
            for key, value in zip(keys, scores, strict=True):
                pre[key] = pre.get(key, 0.0) + weight * _normalized(value, scale)
        else:
            for rank, key in enumerate(keys, start=1):
                pre[key] = pre.get(key, 0.0) + weight * _rank_score(rank, len(keys))
    return sorted(pre, key=lambda k: (-pre[k], k))[:count]


def evidence(
    ranked: RankedLists, candidates: Mapping[ResultKey, Candidate], dates: Sequence[DateMention] = (), *,
    strict: bool = False,
) -> dict[ResultKey, Evidence]:
    """Each candidate's absolute evidence for its score (domain/relevance.py): its cosine when it
    has one, its keyword coverage when its source's keyword signal ran (0 when no row of the
    scope matched a query word), and whether its time falls on one of ``dates`` (the query's).

    A ``strict`` keyword query (websearch syntax: a quoted phrase, ``-word``, ``OR`` in capitals) that matched
    no row of a source says nothing about the query's words there (``When did Jon start reading
    "The Lean Startup"?`` finds no row holding the exact phrase though rows hold its words), so
    that source's rows have no coverage (the cosine's model alone) rather than coverage 0."""
    idf_totals = {source: sum(idfs.values()) for source, (idfs, *_) in ranked.keyword_stats.items()}
    out: dict[ResultKey, Evidence] = {}
    for key, cand in candidates.items():
        source = key[0]
        keyword = ranked.lists.get((source, Signal.KEYWORD))
        matched = keyword is not None and (bool(keyword) or not strict)
        out[key] = Evidence(cand.similarity, coverage(cand.bm25, idf_totals.get(source, 0.0)) if matched else None,
                            on_named_date(cand, dates))
    return out
