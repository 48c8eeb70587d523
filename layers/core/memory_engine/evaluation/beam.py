"""BEAM: long technical conversations between a user and an assistant, each in its own memory.

Every message is written through the batch write path in order (``source_conversation_id`` per
session, the session date as ``valid_from``, the role as ``subject``); a message over the entry
limit is split into consecutive entries, each labelled with the message's id. Questions of every
category but ``abstention`` are positives (relevant: their ``evidence_ids``); ``abstention``
questions (no evidence) are the negatives of evaluation/scored.py. Reported per category:
recall@10 (share of the evidence messages in the first 10 results) and hit@10 (any of them), for
the presets and for a plain BM25 index (bm25s) over the same whole messages; for
``knowledge_update``, how often the updated message ranks above the original when both are in
the first 10.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_engine.bootstrap import Container
from memory_engine.domain.entries import MAX_CONTENT_CHARS
from memory_engine.domain.search_config import PRESETS
from memory_engine.domain.search_models import SearchRequest
from memory_engine.evaluation.metrics import MetricTable, recall_at_k
from memory_engine.evaluation.plain_bm25 import ROW as PLAIN_ROW
from memory_engine.evaluation.plain_bm25 import index as plain_bm25_index
from memory_engine.evaluation.scored import ScoredQuery, rows_of
from memory_engine.services.search_knowledge import search_knowledge

logger = logging.getLogger(__name__)

ROWS = ("vector_only", "keyword_only", "hybrid")
NEGATIVE = "abstention"


@dataclass(frozen=True)
class Message:
    id: int
    role: str
    content: str
    when: datetime | None
    session: int


@dataclass(frozen=True)
class BeamQuestion:
    category: str
    text: str
    evidence: frozenset[str]
    updated: frozenset[str] = frozenset()


@dataclass(frozen=True)
class BeamConversation:
    id: str
    messages: list[Message]
    questions: list[BeamQuestion]


def _date(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)).replace(tzinfo=UTC) if text else None
    except ValueError:
        return None


def load(root: Path, *, sizes: Sequence[str] = ("100K", "500K"), max_conversations: int | None = None) -> list[BeamConversation]:
    """The conversations of ``root`` (``beam-<size>-<n>.json.gz``) of the given sizes, in order."""
    out: list[BeamConversation] = []
    for size in sizes:
        files = sorted(root.glob(f"beam-{size}-*.json.gz"), key=lambda p: int(p.name.split("-")[2].split(".")[0]))
        for path in files[:max_conversations]:
            data = json.loads(gzip.decompress(path.read_bytes()))
            messages = [Message(int(t["id"]), str(t["role"]), str(t["content"]), _date(t.get("time")),
                                int(t.get("session") or 0))
                        for t in data["turns"] if str(t.get("content") or "").strip()]
            questions = [BeamQuestion(str(q["category"]), str(q["question"]),
                                      frozenset(str(i) for i in q.get("evidence_ids") or []),
                                      frozenset(str(i) for i in q.get("updated_ids") or []))
                         for q in data["questions"]]
            out.append(BeamConversation(str(data["conversation_id"]), messages, questions))
    return out


def pieces(text: str, limit: int = MAX_CONTENT_CHARS) -> list[str]:
    """``text`` as consecutive entries of at most ``limit`` characters, cut at whitespace when one is near."""
    text = text.strip()
    out = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit)
        cut = cut if cut > 0 else limit
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    return [*out, text] if text else out


def seed(container: Container, project_id: str, conversation: BeamConversation,
         batch: int = 50) -> tuple[str, dict[str, frozenset[str]]]:
    """Write the conversation through the batch path; returns (memory id, entry id -> message ids)."""
    from memory_engine.services.write_batch import write_entries

    memory = container.memories.create(project_id, name=f"beam {conversation.id}", tags=("eval:beam",))
    labels: dict[str, set[str]] = {}
    items: list[tuple[str, dict[str, Any]]] = []
    for m in conversation.messages:
        for piece in pieces(m.content):
            items.append((str(m.id), {
                "memory_id": memory.id, "content": piece, "subject": m.role, "duplicate_threshold": 1.0,
                "valid_from": m.when.isoformat() if m.when else None, "metadata": {"message_id": m.id},
                "source_conversation_id": f"{conversation.id}/{m.session}",
            }))
    for start in range(0, len(items), batch):
        part = items[start:start + batch]
        written = write_entries(container.entries, container.embedder, container.chat_model, project_id=project_id,
                                items=[item for _, item in part])
        for (message_id, _), result in zip(part, written, strict=True):
            if result.entry is not None:
                labels.setdefault(result.entry.id, set()).add(message_id)
    return memory.id, {k: frozenset(v) for k, v in labels.items()}


def seed_as_turns(container: Container, project_id: str, conversation: BeamConversation,
                  batch: int = 50) -> tuple[str, dict[str, frozenset[str]]]:
    """Record the conversation through the turns endpoint's service: each session a conversation,
    each message one whole turn (an episode, however long), no extraction; returns (memory id,
    episode id -> message ids), searched with ``include: ["episodes"]``."""
    from memory_engine.domain.turns import TurnInput, TurnsRequest
    from memory_engine.services.turns import TurnPorts, record_turns

    memory = container.memories.create(project_id, name=f"beam {conversation.id}", tags=("eval:beam",))
    ports = TurnPorts(memories=container.memories, episodes=container.episodes, embedder=container.embedder, queue=None)
    sessions: dict[int, list[Message]] = {}
    for m in conversation.messages:
        sessions.setdefault(m.session, []).append(m)
    labels: dict[str, set[str]] = {}
    for session, messages in sessions.items():
        for start in range(0, len(messages), batch):
            part = messages[start:start + batch]
            request = TurnsRequest(conversation_id=f"{conversation.id}/{session}", turns=[TurnInput(
                turn_id=str(m.id), role="assistant" if m.role == "assistant" else "user", content=m.content,
                occurred_at=m.when) for m in part])
            for m, stored in zip(part, record_turns(ports, project_id, memory.id, request).turns, strict=True):
                labels.setdefault(stored.id, set()).add(str(m.id))
    return memory.id, {k: frozenset(v) for k, v in labels.items()}


def plain_bm25(conversation: BeamConversation) -> Callable[[str, int], list[str]]:
    """A bm25s index over the whole messages (:mod:`plain_bm25`)."""
    return plain_bm25_index([str(m.id) for m in conversation.messages], [m.content for m in conversation.messages])


@dataclass
class BeamReport:
    table: MetricTable = field(default_factory=lambda: MetricTable(("R@10", "hit@10")))
    #: per row: (updated above original, pairs with both in the first 10)
    updates: dict[str, list[int]] = field(default_factory=dict)
    negatives: list[ScoredQuery] = field(default_factory=list)

    def add(self, row: str, question: BeamQuestion, ranked: Sequence[frozenset[str]]) -> None:
        hit = 1.0 if any(labels & question.evidence for labels in ranked[:10]) else 0.0
        self.table.add(row, ("overall", question.category), **{"R@10": recall_at_k(ranked, question.evidence, 10), "hit@10": hit})
        if question.category == "knowledge_update" and question.updated:
            counts = self.updates.setdefault(row, [0, 0])
            first = {label: i for i, labels in reversed(list(enumerate(ranked[:10]))) for label in labels}
            for new in question.updated:
                for old in question.evidence - question.updated:
                    if new in first and old in first:
                        counts[1] += 1
                        counts[0] += first[new] < first[old]

    def render(self, title: str) -> str:
        lines = [self.table.render(title), "", "knowledge_update: updated message above the original, both in the first 10:"]
        lines += [f"- {row}: {a} of {n}" for row, (a, n) in self.updates.items()]
        return "\n".join(lines)


def evaluate(container: Container, conversations: Sequence[BeamConversation], *, rows: Sequence[str] = ROWS,
             project: str = "eval-beam", plain: bool = True, as_turns: bool = False) -> BeamReport:
    """Seed each conversation, ask its questions under each preset (the whole ranking, ``min_score: 0``:
    what the default floor costs is in the negatives report) and, with ``plain``, of a bm25s index;
    the hybrid's rankings also feed the abstention negatives. With ``as_turns`` the messages are
    recorded as episodes (:func:`seed_as_turns`) and searched with ``include: ["episodes"]``."""
    from memory_engine.evaluation.beir import analyze

    project_id = container.projects.get_or_create_project(project).id
    report = BeamReport()
    for conversation in conversations:
        memory_id, labels = (seed_as_turns if as_turns else seed)(container, project_id, conversation)
        analyze(container)
        logger.info("seeded %s: %d messages -> %d entries", conversation.id, len(conversation.messages), len(labels))
        top = plain_bm25(conversation) if plain else None
        for question in conversation.questions:
            request = SearchRequest(query=question.text, memory_ids=[memory_id], limit=10, min_score=0,
                                    include=["episodes"] if as_turns else [])
            if question.category == NEGATIVE or not question.evidence:
                report.negatives.append(rows_of(container, project_id, request, labels, frozenset(), "beam"))
                continue
            report.negatives.append(rows_of(container, project_id, request, labels, question.evidence, "beam"))
            for row in rows:
                response = search_knowledge(container.knowledge_index, container.embedder, project_id=project_id,
                                            request=request, config=PRESETS[row])
                report.add(row, question, [labels.get(r.id, frozenset()) for r in response.results])
            if top is not None:
                report.add(PLAIN_ROW, question, [frozenset({i}) for i in top(question.text, 10)])
    return report
