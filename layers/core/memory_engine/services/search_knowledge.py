"""The one retrieval function: hybrid search over memory facts, document chunks and episodes."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from memory_engine.domain import supersession
from memory_engine.domain.query_text import date_mentions, name_candidates, speaker_names, uses_websearch_syntax
from memory_engine.domain.relevance import Evidence, along_ranking, kept
from memory_engine.domain.render import render
from memory_engine.domain.search_config import HYBRID, PRESETS, SearchConfig, Signal
from memory_engine.domain.search_models import AnyResult, ResultKey, Scopes, SearchRequest, SearchResponse, SignalQuery
from memory_engine.domain.search_plan import RankedRow, Ranking, SearchPlan
from memory_engine.errors import EmbeddingError, InvalidInput
from memory_engine.ports.chat import ChatModel
from memory_engine.ports.embedder import Embedder, Vector
from memory_engine.ports.search import KnowledgeIndex
from memory_engine.services.synthesize_results import synthesize_results

logger = logging.getLogger(__name__)

EMBEDDING_DEGRADED = "vector: the query could not be embedded; ranked by keyword, entity and recency"


@dataclass(frozen=True)
class QueryVector:
    """The query's unit vector, if any, and whether the model failed to give one (degraded mode:
    the query is ranked by keyword, entity and recency instead)."""

    vector: Vector | None
    embedding_failed: bool = False


def _query_vector(request: SearchRequest, embedder: Embedder) -> QueryVector:
    """The query's unit vector: the caller's (checked), the embedder's, or none (``embedding_failed``
    when the model failed)."""
    if request.query_embedding is not None:
        if len(request.query_embedding) != embedder.dimensions:
            raise InvalidInput(
                f"query_embedding has {len(request.query_embedding)} dimensions; this deployment uses {embedder.dimensions}",
                details=[{"field": "query_embedding", "message": f"expected {embedder.dimensions} values"}],
            )
        vector = np.asarray(request.query_embedding, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(norm) or norm == 0.0:
            raise InvalidInput("query_embedding must be a finite, non-zero vector",
                               details=[{"field": "query_embedding", "message": "zero or non-finite vector"}])
        return QueryVector(vector / np.float32(norm))
    if request.query is None:
        return QueryVector(None)
    try:
        return QueryVector(embedder.embed_query(request.query))
    except EmbeddingError as error:
        logger.warning("query embedding failed, degrading: %s", error)
        return QueryVector(None, embedding_failed=True)


def _config_for(request: SearchRequest, config: SearchConfig) -> SearchConfig:
    if request.preset is not None:
        config = PRESETS[request.preset]
    requested = request.requested_signals()
    return config if requested is None else config.with_signals(requested)


def search_knowledge(
    index: KnowledgeIndex, embedder: Embedder, *, project_id: str, request: SearchRequest,
    config: SearchConfig = HYBRID, chat: ChatModel | None = None,
) -> SearchResponse:
    """Run one search (SPEC "Retrieval") within ``project_id``.

    Sources follow the filters (memories only when ``memory_ids``/``memory_tags`` are given; their
    episodes too with ``include: ["episodes"]``, ranked among the results, ``source_type: "episode"``).
    With a query, the index is given one :class:`SearchPlan` and returns the fused ranking: every
    configured signal ranks candidates per source, the candidates' features are read (cosine, BM25,
    conversation/document neighbours, subjects, dates) and
    :func:`memory_engine.domain.fusion.fuse` scores them (``fusion="rrf"``: Reciprocal Rank Fusion
    of the lists, ``config.rrf_k``); only the page's rows are read, with the ranking, and the page's
    facts that state the same thing are put newest first (``config.newer_first``,
    domain/supersession.py). Without
    a query, results are deterministic reads. An embedding failure degrades to keyword + entity + recency and is
    reported in ``degraded``. Raises :class:`InvalidInput` for a ``query_embedding`` of the
    wrong dimension; :class:`DatabaseError` when the database fails.

    ``include: ["synthesis"]`` asks ``chat`` for a short prose summary of the page's results (the only
    model call on the read path, with its latency); absent and listed in ``degraded`` when ``chat`` is
    missing or fails, never in place of ``results``.
    """
    scopes = Scopes.from_request(request)
    raw = "raw" in request.include
    query_vector = _query_vector(request, embedder)
    degraded = [EMBEDDING_DEGRADED] if query_vector.embedding_failed else []
    embedding = query_vector.vector
    config = _config_for(request, config)

    if scopes.memories is None and scopes.documents is None:
        results: list[AnyResult] = []
    elif not request.has_query:
        results = index.recent(project_id, scopes, request.limit, raw=raw)
    else:
        results = _ranked(index, project_id, request, config, scopes, query_vector, raw=raw)

    if "synthesis" in request.include:
        synthesis, note = synthesize_results(chat, request.query, results)
        if note is not None:
            degraded.append(note)
    else:
        synthesis = None
    response = SearchResponse(results=results, degraded=degraded or None, synthesis=synthesis)
    if request.render:
        response.context = render(results)
    if "episodes" in request.include and scopes.memories is not None:
        response.episodes = index.episodes(project_id, scopes.memories, embedding, request.limit)
    return response


def ranking(
    index: KnowledgeIndex, project_id: str, request: SearchRequest, config: SearchConfig, scopes: Scopes,
    query_vector: QueryVector,
) -> list[RankedRow] | None:
    """The whole fused ranking of a query (best first), each row with its relevance estimate; None
    for ``fusion="rrf"`` (its rows are scored by their cosine once read: :func:`_rrf_page`)."""
    if config.fusion == "rrf":
        return None
    return index.ranking(project_id, _plan(request, config, scopes, query_vector)).rows


def _plan(request: SearchRequest, config: SearchConfig, scopes: Scopes, query_vector: QueryVector, *,
          page: int = 0, raw: bool = False) -> SearchPlan:
    """What the index ranks: the query as its signals read it, the scopes and the fusion config;
    and how many of the ranking's first rows it reads with it (``page``, as ``raw`` says)."""
    signals = set(config.signals)
    if query_vector.embedding_failed:
        signals = (signals - {Signal.VECTOR}) | {Signal.KEYWORD, Signal.ENTITY, Signal.RECENCY}
    # The date list and the date boost read the same mentions; RRF (search v1) uses neither.
    dates = date_mentions(request.query) if config.date_boost and config.fusion == "convex" and request.query else []
    query = SignalQuery(
        text=request.query,
        embedding=query_vector.vector,
        signals=frozenset(signals),
        depth=config.depth(request.limit),
        # the names a query may mention: read by the entity signal and the subject boost alone
        entity_names=tuple(name_candidates(request.query))
        if request.query and (Signal.ENTITY in signals or config.subject_boost) else (),
        speakers=speaker_names(request.query) if request.query and config.subject_boost else (),
        entity_top_k=config.entity_top_k,
        entity_min_similarity=config.entity_min_similarity,
        ef_search=max(config.ef_search, config.depth(request.limit)),
        keyword_strict=bool(request.query) and uses_websearch_syntax(request.query or ""),
        dates=tuple(dates),
    )
    return SearchPlan(query, scopes, config, page=page, raw=raw)


def _ranked(
    index: KnowledgeIndex, project_id: str, request: SearchRequest, config: SearchConfig, scopes: Scopes,
    query_vector: QueryVector, *, raw: bool,
) -> list[AnyResult]:
    # the page is at most the ranking's first `limit` rows, read with it
    ranked = index.ranking(project_id, _plan(request, config, scopes, query_vector, page=request.limit, raw=raw))
    if config.fusion == "rrf":
        return _rrf_page(request, ranked)
    return _page(request, ranked)


def _page(request: SearchRequest, ranking: Ranking) -> list[AnyResult]:
    """The page in fused order: the ranking's first ``limit`` rows, each fact below a newer one of the
    page that states the same thing (the pairs the index read with the page, ``config.newer_first``:
    :func:`memory_engine.domain.supersession.newer_first`), scored along the page
    (domain/relevance.py: a row's score is the best estimate at or below it on the page, so a fact
    moved up scores at least what the older one it now stands above scores), cut by the relevance
    floor (:func:`memory_engine.domain.relevance.kept`), with per-signal ranks; the rows as the
    index read them with the ranking (one deleted since is left out)."""
    head = supersession.newer_first(ranking.rows[: request.limit], lambda row: row.key, ranking.restated)
    floor = _turns_and_facts_only(row.key for row in head)
    scores = along_ranking([row.estimate for row in head])
    page = list(zip(head, scores, strict=False))[: kept(scores, request.min_score, default_floor=floor)]
    return [_shown(ranking.shown[item.key], item, score) for item, score in page if item.key in ranking.shown]


def _rrf_page(request: SearchRequest, ranking: Ranking) -> list[AnyResult]:
    """Search v1: Reciprocal Rank Fusion of the lists (kept as the ``rrf_v1`` preset to compare). Its
    page's rows are scored by their cosine alone (no candidate is read before the page)."""
    rows = ranking.shown
    ranked_rows = [replace(f, evidence=Evidence(rows[f.key].similarity_score, None))
                   for f in ranking.rows[: request.limit] if f.key in rows]
    scores = along_ranking([row.estimate for row in ranked_rows])
    floor = _turns_and_facts_only(row.key for row in ranked_rows)
    return [_shown(rows[item.key], item, score)
            for item, score in list(zip(ranked_rows, scores, strict=True))[: kept(scores, request.min_score,
                                                                                  default_floor=floor)]]


def _shown(row: AnyResult, item: RankedRow, score: float) -> AnyResult:
    """``row`` with its score and its rank per signal: the SPEC's signals (and recency, their
    degraded stand-in); the date list is part of the date feature."""
    ranks = {signal.value: rank for (_, signal), rank in item.ranks.items() if signal is not Signal.DATE}
    return row.model_copy(update={"score": round(score, 6), "signal_ranks": ranks})


def _turns_and_facts_only(keys: Iterable[ResultKey]) -> bool:
    """Whether the default relevance floor applies to a page with these rows: memory facts and
    episodes (conversation turns) only (in a document, an exact name or identifier asked for alone
    scores under the floor: domain/relevance.kept)."""
    return all(source in ("memory", "episode") for source, _ in keys)
