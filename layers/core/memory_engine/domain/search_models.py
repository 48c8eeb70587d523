"""Request, response and scope models of ``POST /v1/knowledge/search``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory_engine.domain.entities import anchor_name
from memory_engine.domain.globs import glob_to_like, prefix_to_like
from memory_engine.domain.query_text import DateMention
from memory_engine.domain.search_config import Signal
from memory_engine.domain.validation import Float, Int, StoredJson, Text, Timestamp
from memory_engine.domain.vectors import Vector

SourceType = Literal["memory", "document", "episode"]
#: The names of ``search_config.PRESETS`` (a test keeps the two in step).
PresetName = Literal["hybrid", "vector_only", "keyword_only", "entity_only", "rrf_v1"]
#: Identifies one result across the sources.
ResultKey = tuple[SourceType, str]
#: Identifies one ranked list: which source it ranks, by which signal.
ListKey = tuple[SourceType, Signal]

MAX_QUERY_CHARS = 8_000
MAX_LIMIT = 100
MAX_FILTER_VALUES = 200

_Str = Annotated[Text, Field(min_length=1, max_length=1_000)]


class SearchRequest(BaseModel):
    """The body of ``POST /v1/knowledge/search`` (SPEC "Retrieval"). Unknown fields are a 422."""

    model_config = ConfigDict(extra="forbid")

    query: Text | None = Field(None, max_length=MAX_QUERY_CHARS, description=(
        "What to find, in the words a person would use. A quoted phrase, `-word` and `OR` in capitals are keyword "
        "syntax (PostgreSQL's `websearch_to_tsquery`): the keyword signal then ranks only the rows that match it. "
        "Anything else is read as words, a lowercase \"or\" included."))
    query_embedding: list[Float] | None = Field(None, min_length=1, max_length=16_000)
    memory_ids: list[_Str] | None = Field(None, max_length=MAX_FILTER_VALUES)
    memory_tags: list[_Str] | None = Field(None, max_length=MAX_FILTER_VALUES)
    document_ids: list[_Str] | None = Field(None, max_length=MAX_FILTER_VALUES)
    document_paths: list[_Str] | None = Field(None, max_length=MAX_FILTER_VALUES)
    limit: Int = Field(10, ge=1, le=MAX_LIMIT)
    min_score: Float | None = Field(None, description=(
        "the relevance floor. Given, only results whose `score` is at least `min_score` are returned (`0`: "
        "the whole ranking). Omitted, the default floor 0.02 applies to a page of memories: when its best "
        "result scores under it (nothing stored relates to the query) no results are returned and `render` "
        "gives \"\"; otherwise the whole page is. A page holding document chunks has no default floor (an "
        "exact name or identifier asked for alone scores under it: docs/retrieval.md)"))
    min_confidence: Float = Field(0.5, ge=0.0, le=1.0)
    as_of: Timestamp | None = None
    signals: list[Literal["vector", "keyword", "entity"]] | None = Field(None, min_length=1)
    include: list[Literal["raw", "episodes", "synthesis"]] = Field(default_factory=list, description=(
        "`raw`: each fact's extraction fields; `episodes`: the searched memories' conversation turns (episodes, "
        "as `POST /v1/memories/{memory_id}/turns` and `turn.completed` events record them) join the ranking as "
        "results with `source_type: \"episode\"`, found by every signal over the whole turn (BM25 over its full "
        "text, vectors over windows that cover it), `content` the passage that matched; `synthesis`: a short "
        "prose summary of the results by the chat model"))
    render: bool = False
    preset: PresetName | None = Field(None, description=(
        "a named search config (domain/search_config.py), default `hybrid`; `vector_only` ranks by cosine "
        "alone, e.g. to compare with the hybrid ranking. `signals` narrows the preset further"))

    @field_validator("query")
    @classmethod
    def _blank_query_is_none(cls, value: str | None) -> str | None:
        return value if value is not None and value.strip() else None

    @property
    def has_query(self) -> bool:
        return self.query is not None or self.query_embedding is not None

    @property
    def searches_memories(self) -> bool:
        return bool(self.memory_ids) or bool(self.memory_tags)

    @property
    def searches_documents(self) -> bool:
        # A caller-side ``query_embedding`` stands in for ``query``.
        return self.has_query or bool(self.document_ids) or bool(self.document_paths)

    def requested_signals(self) -> frozenset[Signal] | None:
        return None if self.signals is None else frozenset(Signal(s) for s in self.signals)


class EntityLink(BaseModel):
    name: str
    type: str | None = None
    role: str


class _Result(BaseModel):
    """Fields every result carries, whatever its source."""

    id: str
    content: str
    score: float = Field(description=(
        "a calibrated estimate, 0..1, that the row is relevant to the query, comparable across queries and "
        "memories: read from the row's cosine to the query, the share of the query's keyword weight it "
        "matches and whether its time falls on a date the query names (not from its place in the lists); "
        "0.5 means about half of the rows scored so are relevant on judged data. It never rises down the page. "
        "0 for a read without a query"))
    similarity_score: float | None = None
    signal_ranks: dict[str, int] = Field(default_factory=dict)


class MemoryResult(_Result):
    """A memory fact (entry) in the results."""

    source_type: Literal["memory"] = "memory"
    memory_id: str
    memory_name: str
    tags: list[str] = Field(default_factory=list)
    metadata: StoredJson | None = None
    entities: list[EntityLink] = Field(default_factory=list)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    created_at: datetime
    source_conversation_id: str | None = None
    source_generation_id: str | None = None
    source_event_id: str | None = None
    raw: dict[str, Any] | None = None

    @property
    def anchor(self) -> str | None:
        """The entity this fact is about (:func:`memory_engine.domain.entities.anchor_name`)."""
        return anchor_name(self.entities)


class DocumentResult(_Result):
    """A document chunk in the results."""

    source_type: Literal["document"] = "document"
    document_id: str
    path: str
    title: str | None = None
    page: int | None = None
    chunk_index: int
    tags: list[str] = Field(default_factory=list)
    metadata: StoredJson | None = None


class EpisodeSearchResult(_Result):
    """A conversation turn (an episode of a searched memory) in the results, with
    ``include: ["episodes"]``: ``content`` is the passage of the turn that matched (its best
    window, some 1,000 characters; the whole transcript when it is shorter)."""

    source_type: Literal["episode"] = "episode"
    memory_id: str | None
    conversation_id: str | None = None
    turn_id: str | None = None
    role: str | None = Field(None, description="the turn's role (null for an episode of several messages)")
    occurred_at: datetime | None = None
    created_at: datetime
    metadata: StoredJson | None = Field(
        None, description="the turn's metadata as recorded (null for an episode of several messages)")


#: Any result, whatever its source.
AnyResult = MemoryResult | DocumentResult | EpisodeSearchResult
SearchResult = Annotated[AnyResult, Field(discriminator="source_type")]


class EpisodeResult(BaseModel):
    """A stored turn transcript in ``episodes`` (``include: ["episodes"]``), kept for clients of
    earlier releases: the same episodes are ranked among ``results`` (``source_type: "episode"``)."""

    id: str
    memory_id: str | None
    conversation_id: str | None = None
    turn_id: str | None = None
    occurred_at: datetime | None = None
    transcript: str
    similarity_score: float | None = None


class Synthesis(BaseModel):
    """``include: ["synthesis"]``: the chat model's short prose summary of the returned results."""

    text: str = Field(description="answer-oriented prose drawn only from the results (`\"\"` when nothing matched)")
    model: str | None = Field(None, description="the chat model that wrote it (null when no call was needed)")
    latency_ms: int = Field(ge=0, description="time the model call took (0 when no call was needed)")


class SearchResponse(BaseModel):
    results: list[SearchResult]
    context: str | None = None
    degraded: list[str] | None = None
    episodes: list[EpisodeResult] | None = Field(None, description=(
        "deprecated, kept for earlier clients: with `include: [\"episodes\"]`, the searched memories' episodes "
        "nearest to the query by their first window's vector. The episodes are ranked among `results` "
        "(`source_type: \"episode\"`), by every signal over the whole turn"))
    synthesis: Synthesis | None = None

    def to_body(self) -> dict[str, Any]:
        """The wire shape: optional keys are present only when they apply."""
        return self.model_dump(mode="json", exclude_none=True, exclude={"results"}) | {
            "results": [r.model_dump(mode="json", exclude={"raw"} if getattr(r, "raw", None) is None else None)
                        for r in self.results]
        }


# --- scopes handed to the search index (already validated, always with a project) ---


@dataclass(frozen=True)
class MemoryScope:
    """Which facts are searchable: entries of ``memory_ids``, or entries whose own tags or whose
    memory's tags match a pattern (entry granularity); live, confident enough, valid at ``as_of``."""

    memory_ids: tuple[str, ...] = ()
    tag_patterns: tuple[str, ...] = ()  # LIKE patterns
    min_confidence: float = 0.5
    as_of: datetime | None = None


@dataclass(frozen=True)
class DocumentScope:
    """Which chunks are searchable: every ready document of the project, narrowed by ids/prefixes."""

    document_ids: tuple[str, ...] = ()
    path_patterns: tuple[str, ...] = ()  # LIKE patterns


@dataclass(frozen=True)
class Scopes:
    """The sources a search reads: facts, chunks and, with ``include: ["episodes"]``, the episodes
    (conversation turns) of the same memories as the facts."""

    memories: MemoryScope | None
    documents: DocumentScope | None
    episodes: MemoryScope | None = None

    @classmethod
    def from_request(cls, request: SearchRequest) -> Scopes:
        memories = (
            MemoryScope(
                memory_ids=tuple(dict.fromkeys(request.memory_ids or ())),
                tag_patterns=tuple(glob_to_like(t) for t in dict.fromkeys(request.memory_tags or ())),
                min_confidence=request.min_confidence,
                as_of=request.as_of,
            )
            if request.searches_memories
            else None
        )
        documents = (
            DocumentScope(
                document_ids=tuple(dict.fromkeys(request.document_ids or ())),
                path_patterns=tuple(prefix_to_like(p) for p in dict.fromkeys(request.document_paths or ())),
            )
            if request.searches_documents
            else None
        )
        return cls(memories, documents, memories if "episodes" in request.include else None)


@dataclass
class ScoredKeys:
    """One signal's answer for one source: keys best first with their raw scores (cosine for
    vector, BM25 for keyword); a keyword answer also carries the query's ``idfs`` and the
    scope's ``avgdl`` and ``avgcl`` (mean own and context length) so any other row can be scored the same way."""

    keys: list[ResultKey]
    scores: list[float]
    idfs: dict[str, float] = field(default_factory=dict)
    avgdl: float = 1.0
    avgcl: float = 1.0


@dataclass
class RankedLists:
    """What the index answers for one query: per ``(source, signal)`` list, keys best first (and
    their raw scores for scored signals)."""

    lists: dict[ListKey, list[ResultKey]] = field(default_factory=dict)
    scores: dict[ListKey, list[float]] = field(default_factory=dict)
    #: Per source: the keyword statistics (``idfs``, ``avgdl``, ``avgcl``) of this query.
    keyword_stats: dict[SourceType, tuple[dict[str, float], float, float]] = field(default_factory=dict)

    def add(self, key: ListKey, answer: ScoredKeys | list[ResultKey]) -> None:
        if isinstance(answer, ScoredKeys):
            self.lists[key] = answer.keys
            self.scores[key] = answer.scores
            if answer.idfs:
                self.keyword_stats[key[0]] = (answer.idfs, answer.avgdl, answer.avgcl)
        else:
            self.lists[key] = answer

    def scored(self, signal: Signal) -> dict[ResultKey, float]:
        """The raw scores ``signal`` already returned, by key (every source)."""
        out: dict[ResultKey, float] = {}
        for name, keys in self.lists.items():
            if name[1] is signal:
                out.update(zip(keys, self.scores.get(name, []), strict=True))
        return out


@dataclass(frozen=True)
class Candidate:
    """A row considered for the final ranking, with what fusion reads of it: its cosine to the
    query, its BM25 score under the query's statistics, the rows right before it in its
    conversation (or document), nearest first, who it is about (normalized names: a fact's subject
    entities and ``subject``, a turn's speaker, ``user`` for a user's turn) and ``valid_from``. The
    row itself is read only if it makes the page."""

    similarity: float | None = None
    bm25: float = 0.0
    previous: tuple[ResultKey, ...] = ()
    subjects: tuple[str, ...] = ()
    valid_from: datetime | None = None


@dataclass(frozen=True)
class SignalQuery:
    """One query as the index sees it: text for keyword/entity signals, a unit vector for the
    vector signal (``None`` when embedding failed or was not asked for)."""

    text: str | None
    embedding: Vector | None
    signals: frozenset[Signal]
    depth: int
    entity_names: tuple[str, ...] = ()
    #: Who the query names by a pronoun (``"user"`` for "what did I ...": domain.query_text.speaker_names):
    #: compared with the rows' subjects by the subject boost alone, never looked up as entities.
    speakers: tuple[str, ...] = ()
    entity_top_k: int = 3
    entity_min_similarity: float = 0.75
    ef_search: int = 40
    #: Dates and periods the query names, for the date list (``Signal.DATE``); empty when the
    #: config does not use dates.
    dates: tuple[DateMention, ...] = ()
    #: ``websearch_to_tsquery`` with its own AND semantics when the caller used its syntax
    #: (quotes, ``-term``, ``OR`` in capitals); otherwise its terms are ORed so a question still matches.
    keyword_strict: bool = False
