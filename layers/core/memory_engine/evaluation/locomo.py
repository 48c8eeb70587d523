"""LoCoMo: each conversation into its own memory (one entry per turn, through the write funnel),
questions of categories 1-4 as queries, the evidence ``dia_id``s as the relevant entries."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_engine.bootstrap import Container
from memory_engine.domain.search_config import PRESETS, SearchConfig
from memory_engine.domain.search_models import SearchRequest
from memory_engine.evaluation import plain_bm25
from memory_engine.evaluation.metrics import MetricTable, recall_at_k, reciprocal_rank
from memory_engine.services.search_knowledge import search_knowledge

logger = logging.getLogger(__name__)

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ROWS = ("vector_only", "keyword_only", "entity_only", "hybrid", "rrf_v1")
_DIA = re.compile(r"D(\d+):(\d+)")
_SESSION = re.compile(r"^session_(\d+)$")


def parse_evidence(evidence: Sequence[Any]) -> frozenset[str]:
    """Evidence ids, defensively: ``'D8:6; D9:17'`` gives two, ``'D'`` none, ``'D:11:26'`` none."""
    found: set[str] = set()
    for item in evidence:
        for session, turn in _DIA.findall(str(item)):
            found.add(f"D{int(session)}:{int(turn)}")
    return frozenset(found)


def parse_session_date(text: str | None) -> datetime | None:
    """``'1:56 pm on 8 May, 2023'`` -> an aware datetime (UTC); None when unparseable."""
    if not text:
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    when: datetime | None


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]


def load(path: Path, *, max_conversations: int | None = None, max_sessions: int | None = None) -> list[Conversation]:
    """Conversations with their turns and category 1-4 questions. ``max_sessions`` keeps the first
    sessions only, and the questions whose evidence lies entirely within them (small test runs)."""
    samples = json.loads(path.read_text("utf-8"))
    out: list[Conversation] = []
    for sample in samples[:max_conversations]:
        conv = sample["conversation"]
        turns = []
        sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION.match(key)))[:max_sessions]
        for number, key in sessions:
            when = parse_session_date(conv.get(f"session_{number}_date_time"))
            for turn in conv[key] or []:
                text = str(turn.get("text") or "").strip()
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                ids = parse_evidence([turn.get("dia_id", "")])
                if text and ids:
                    turns.append(Turn(next(iter(ids)), str(turn.get("speaker") or "unknown"), text, when))
        questions = [
            Question(str(qa["question"]), int(qa["category"]), parse_evidence(qa.get("evidence") or []))
            for qa in sample.get("qa", [])
            if int(qa.get("category", 0)) in CATEGORIES
        ]
        if max_sessions is not None:
            seeded = {t.dia_id for t in turns}
            questions = [q for q in questions if q.evidence and q.evidence <= seeded]
        out.append(Conversation(str(sample.get("sample_id", f"conv-{len(out)}")), turns, questions))
    return out


def seed(container: Container, project_id: str, conversation: Conversation,
         write: Callable[..., Any] | None = None) -> tuple[str, dict[str, frozenset[str]]]:
    """Write one conversation through the funnel (``write``, e.g. ``POST /v1/memory-entries`` in
    bench/peers.py's HTTP row; the service by default), each session as its own source conversation (so
    every turn gets the turn before it as context, as any client writing turns with
    ``source_conversation_id`` does); returns (memory id, entry id -> dia ids)."""
    from memory_engine.domain.entries import EntityRef, NewEntry
    from memory_engine.services.write_entry import write_entry

    write = write or write_entry

    memory = container.memories.create(project_id, name=f"locomo {conversation.sample_id}", tags=("eval:locomo",))
    labels: dict[str, set[str]] = {}
    for turn in conversation.turns:
        entry = NewEntry(
            memory_id=memory.id, content=turn.text, subject=turn.speaker, entities=[EntityRef(name=turn.speaker, type="person")],
            valid_from=turn.when, metadata={"dia_id": turn.dia_id}, source_type="manual",
            source_conversation_id=f"{conversation.sample_id}/{turn.dia_id.split(':', 1)[0]}",
        )
        # 1.0: only exact repeats are skipped; their dia_id then labels the surviving entry
        result = write(container.entries, container.embedder, container.chat_model, project_id=project_id, entry=entry,
                       duplicate_threshold=1.0)
        labels.setdefault(result.entry.id, set()).add(turn.dia_id)
    return memory.id, {k: frozenset(v) for k, v in labels.items()}


def seed_as_client(container: Container, project_id: str, conversation: Conversation,
                   batch: int = 100) -> tuple[str, dict[str, frozenset[str]]]:
    """Write one conversation the way a plain client does through ``POST /v1/memory-entries/batch``:
    content ``"<speaker>: <text>"``, the speaker as an entity, no ``subject``, ``source_conversation_id``
    per session, ``valid_from``, the default ``duplicate_threshold`` (a turn the funnel skips labels
    the entry it duplicates); nothing analyzed afterwards."""
    from memory_engine.services.write_batch import write_entries

    memory = container.memories.create(project_id, name=f"locomo {conversation.sample_id}", tags=("eval:locomo",))
    labels: dict[str, set[str]] = {}
    for start in range(0, len(conversation.turns), batch):
        part = conversation.turns[start:start + batch]
        items = [{
            "memory_id": memory.id, "content": f"{turn.speaker}: {turn.text}", "entities": [{"name": turn.speaker}],
            "valid_from": turn.when.isoformat() if turn.when else None, "metadata": {"dia_id": turn.dia_id},
            "source_conversation_id": f"{conversation.sample_id}/{turn.dia_id.split(':', 1)[0]}",
        } for turn in part]
        written = write_entries(container.entries, container.embedder, container.chat_model, project_id=project_id,
                                items=items)
        for turn, item in zip(part, written, strict=True):
            if item.entry is not None:
                labels.setdefault(item.entry.id, set()).add(turn.dia_id)
    return memory.id, {k: frozenset(v) for k, v in labels.items()}


def seed_as_turns(container: Container, project_id: str, conversation: Conversation,
                  batch: int = 100) -> tuple[str, dict[str, frozenset[str]]]:
    """Record one conversation through the turns endpoint's service (``POST /v1/memories/{id}/turns``):
    each session a conversation, each turn one episode (``turn_id`` its dia_id, ``"<speaker>: <text>"``,
    the first speaker ``user`` and the other ``assistant``, ``occurred_at`` the session's date), no
    extraction; returns (memory id, episode id -> dia ids), searched with ``include: ["episodes"]``."""
    from memory_engine.domain.turns import TurnInput, TurnsRequest
    from memory_engine.services.turns import TurnPorts, record_turns

    memory = container.memories.create(project_id, name=f"locomo {conversation.sample_id}", tags=("eval:locomo",))
    ports = TurnPorts(memories=container.memories, episodes=container.episodes, embedder=container.embedder, queue=None)
    speakers = list(dict.fromkeys(turn.speaker for turn in conversation.turns))
    sessions: dict[str, list[Turn]] = {}
    for turn in conversation.turns:
        sessions.setdefault(turn.dia_id.split(":", 1)[0], []).append(turn)
    labels: dict[str, set[str]] = {}
    for session, turns in sessions.items():
        for start in range(0, len(turns), batch):
            part = turns[start:start + batch]
            request = TurnsRequest(conversation_id=f"{conversation.sample_id}/{session}", turns=[TurnInput(
                turn_id=turn.dia_id, role="user" if turn.speaker == speakers[0] else "assistant",
                content=f"{turn.speaker}: {turn.text}", occurred_at=turn.when) for turn in part])
            recorded = record_turns(ports, project_id, memory.id, request)
            for turn, stored in zip(part, recorded.turns, strict=True):
                labels.setdefault(stored.id, set()).add(turn.dia_id)
    return memory.id, {k: frozenset(v) for k, v in labels.items()}


def evaluate(
    container: Container, conversations: Sequence[Conversation], *, rows: Sequence[str] = ROWS,
    configs: dict[str, SearchConfig] | None = None, max_questions: int | None = None, project: str = "eval-locomo",
    as_client: bool = False, plain: bool = False, as_turns: bool = False,
) -> MetricTable:
    """Seed every conversation, run every question under every config; recall@5/10 and MRR of the
    ranking (``min_score: 0``: the default floor's cost is in ``memory-engine eval negatives``). With
    ``as_client`` each conversation is written as :func:`seed_as_client` does and searched right
    after, without ``ANALYZE``. With ``plain``, a row of a plain BM25 index over the same turns
    (:mod:`memory_engine.evaluation.plain_bm25`). With ``as_turns`` each conversation is recorded as
    the memory's episodes (:func:`seed_as_turns`) and searched with ``include: ["episodes"]``: the
    episodes are the only rows searched."""
    configs = configs or PRESETS
    project_id = container.projects.get_or_create_project(project).id
    table = MetricTable(("R@5", "R@10", "MRR"))
    from memory_engine.evaluation.beir import analyze

    for conversation in conversations:
        if as_client:
            memory_id, labels = seed_as_client(container, project_id, conversation)
        elif as_turns:
            memory_id, labels = seed_as_turns(container, project_id, conversation)
            analyze(container)
        else:
            memory_id, labels = seed(container, project_id, conversation)
            analyze(container)
        logger.info("seeded %s: %d turns -> %d entries", conversation.sample_id, len(conversation.turns), len(labels))
        questions = [q for q in conversation.questions if q.evidence][:max_questions]
        for row in rows:
            for question in questions:
                request = SearchRequest(query=question.text, memory_ids=[memory_id], limit=10, min_score=0,  # the ranking
                                        include=["episodes"] if as_turns else [])
                response = search_knowledge(container.knowledge_index, container.embedder, project_id=project_id,
                                            request=request, config=configs[row])
                _add(table, row, question, [labels.get(r.id, frozenset()) for r in response.results])
        if plain:
            top = plain_bm25.index([t.dia_id for t in conversation.turns], [f"{t.speaker}: {t.text}" for t in conversation.turns])
            for question in questions:
                _add(table, plain_bm25.ROW, question, [frozenset({dia}) for dia in top(question.text, 10)])
    return table


def _add(table: MetricTable, row: str, question: Question, ranked: Sequence[frozenset[str]]) -> None:
    table.add(row, ("overall", CATEGORIES[question.category]), **{
        "R@5": recall_at_k(ranked, question.evidence, 5),
        "R@10": recall_at_k(ranked, question.evidence, 10),
        "MRR": reciprocal_rank(ranked, question.evidence),
    })


def negatives(container: Container, conversations: Sequence[Conversation], *, max_questions: int | None = None,
              project: str = "eval-negatives-locomo") -> list[Any]:
    """Every conversation in its own memory; each question searched in its own memory (a positive)
    and in the next conversation's (a negative: nothing there can be relevant). Rows as
    :func:`memory_engine.evaluation.scored.rows_of` keeps them."""
    from memory_engine.evaluation.beir import analyze
    from memory_engine.evaluation.scored import rows_of

    project_id = container.projects.get_or_create_project(project).id
    seeded = [seed(container, project_id, conversation) for conversation in conversations]
    analyze(container)
    out = []
    for i, conversation in enumerate(conversations):
        memory_id, labels = seeded[i]
        other_id, _ = seeded[(i + 1) % len(seeded)]
        for question in [q for q in conversation.questions if q.evidence][:max_questions]:
            out.append(rows_of(container, project_id, SearchRequest(query=question.text, memory_ids=[memory_id], limit=10),
                               labels, question.evidence, "locomo"))
            if other_id != memory_id:
                out.append(rows_of(container, project_id, SearchRequest(query=question.text, memory_ids=[other_id], limit=10),
                                   {}, frozenset(), "locomo"))
    return out
