"""Fakes of the ports for fast service tests: each subclasses its port (a Protocol or an ABC)
and does in memory what the service test needs; what it does not need stays the port's stub."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memory_engine.domain.documents import Document, DocumentStatus
from memory_engine.domain.entries import MemoryEntry
from memory_engine.domain.search_config import Signal
from memory_engine.domain.search_models import (
    AnyResult,
    Candidate,
    EpisodeResult,
    MemoryResult,
    MemoryScope,
    RankedLists,
    ResultKey,
    Scopes,
    SignalQuery,
)
from memory_engine.domain.search_plan import Ranking, SearchPlan, fused_ranking
from memory_engine.errors import EmbeddingError, NotFound
from memory_engine.ports.documents import DocumentRepository
from memory_engine.ports.embedder import Embedder, EmbeddingKind, Vector
from memory_engine.ports.entries import EntryChanges, EntryRepository, Replaced
from memory_engine.ports.search import KnowledgeIndex

NOW = datetime(2025, 5, 8, 12, 0, tzinfo=UTC)
DIM = 4


class FakeEmbedder(Embedder):
    """Embeds text as a fixed unit-ish vector per text (or fails when ``failing``); records texts."""

    dimensions = DIM
    model_id = "fake"

    def __init__(self, *, failing: bool = False) -> None:
        super().__init__()
        self.failing = failing
        self.texts: list[str] = []

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        if self.failing:
            raise EmbeddingError("the fake model is down")
        self.texts.extend(texts)
        return [[1.0, float(len(t) % 7), 0.5, 0.25] for t in texts]


class FakeIndex(KnowledgeIndex):
    """Ranks with the lists it is given: every listed key is a candidate (its cosine the vector
    list's score) and a row; the ranking is the domain's, as the real index's is."""

    def __init__(self, ranked: RankedLists) -> None:
        self.ranked = ranked
        self.queries: list[SignalQuery] = []

    def ranking(self, project_id: str, plan: SearchPlan) -> Ranking:
        self.queries.append(plan.query)
        similarity = self.ranked.scored(Signal.VECTOR)
        candidates = {key: Candidate(similarity=similarity.get(key)) for keys in self.ranked.lists.values() for key in keys}
        rows = fused_ranking(plan, self.ranked, candidates)
        shown: dict[ResultKey, AnyResult] = {
            row.key: MemoryResult(id=row.key[1], content=f"fact {row.key[1]}", score=0.0, memory_id="mem_1",
                                  memory_name="m", created_at=NOW) for row in rows[: plan.page]}
        return Ranking(rows, shown)

    def recent(self, project_id: str, scopes: Scopes, limit: int, *, raw: bool = False) -> list[AnyResult]:
        return []

    def episodes(self, project_id: str, scope: MemoryScope, embedding: Vector | None, limit: int) -> list[EpisodeResult]:
        return []


class FakeDocuments(DocumentRepository):
    """Records what ``list_documents`` was asked."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def list_documents(self, project_id: str, *, path_prefix: str | None = None, tags: Sequence[str] = (),
                       status: DocumentStatus | None = None, limit: int = 20,
                       cursor: str | None = None) -> tuple[list[Document], str | None]:
        self.asked.append({"path_prefix": path_prefix, "tags": list(tags), "status": status, "limit": limit,
                           "cursor": cursor})
        return [], None


def stored_entry(**fields: Any) -> MemoryEntry:
    row: dict[str, Any] = {
        "id": "ment_1", "project_id": "proj_1", "memory_id": "mem_1", "content": "Erin lives in Oslo.",
        "source_type": "manual", "tags": [], "metadata": None, "subject": None, "predicate": None, "object": None,
        "entities": [], "confidence": 1.0, "source_quote": None, "valid_from": None, "valid_to": None,
        "source_conversation_id": None, "source_generation_id": None, "source_event_id": None,
        "invalidated_at": None, "superseded_by_entry_id": None, "invalidation_reason": None,
        "created_at": NOW, "updated_at": NOW,
    }
    return MemoryEntry(**(row | fields))


class FakeEntries(EntryRepository):
    """One stored entry; ``replace`` records the changes and applies the plain fields."""

    def __init__(self, entry: MemoryEntry) -> None:
        self.entry = entry
        self.changes: list[EntryChanges] = []

    def get(self, project_id: str, entry_id: str) -> MemoryEntry:
        if entry_id != self.entry.id:
            raise NotFound(f"memory entry {entry_id} not found")
        return self.entry

    def replace(self, project_id: str, entry_id: str, changes: EntryChanges) -> Replaced:
        self.changes.append(changes)
        self.entry = self.entry.model_copy(update=changes.fields)
        return Replaced(self.entry)
