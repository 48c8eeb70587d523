"""A LoCoMo session (../shared/data/locomo) through the local event path end to end: each pair of
dialogue turns becomes a turn.completed event on the local queue -> the SQS-shaped consumer ->
extract_turn -> episodes + facts. The chat model is a fake that answers with LoCoMo's own
per-session observations whose evidence lies in the turn (so the facts are derived from the turns).
Then the episodes are searched with LoCoMo's questions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.write_decision import ARBITRATION_SYSTEM_PROMPT
from memory_engine.ports.chat import ChatModel, ChatRequest
from tests.conftest import shared_data
from tests.support.api_client import ApiClient
from tests.support.extraction import turn_event

CONVERSATION = 0  # conv-26: Caroline and Melanie
SESSION = 1


class LocomoObservationModel(ChatModel):
    """Answers an extraction call with the session's observations whose evidence turn is in the
    transcript, as objects inside chatty prose; arbitration calls get "distinct"."""

    model_id = "locomo-observations"

    def __init__(self, turns: list[dict[str, Any]], observations: dict[str, list[list[str]]]) -> None:
        self._text_to_turn = {t["text"].strip(): t for t in turns}
        self._by_evidence: dict[str, list[tuple[str, str]]] = {}
        for speaker, items in observations.items():
            for content, evidence in items:
                for dia_id in str(evidence).replace(";", ",").split(","):
                    self._by_evidence.setdefault(dia_id.strip(), []).append((speaker, content))
        self.extraction_calls = 0

    def _complete(self, request: ChatRequest) -> str:
        messages = request.messages
        if request.system == ARBITRATION_SYSTEM_PROMPT:
            return '{"decision": "distinct", "reason": "different facts"}'
        self.extraction_calls += 1
        transcript = messages[-1].content
        facts = []
        for text, turn in self._text_to_turn.items():
            if text in transcript:
                for speaker, content in self._by_evidence.get(turn["dia_id"], []):
                    facts.append({"content": content, "subject": speaker, "entities": [{"name": speaker, "type": "person"}],
                                  "confidence": 0.9, "source_quote": text[:200]})
        return f"Here are the facts from this part of the conversation:\n```json\n{json.dumps(facts, indent=1)}\n```"


def _session_time(text: str) -> datetime:
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def locomo() -> dict[str, Any]:
    data = json.loads(shared_data("locomo", "locomo_dev5.json").read_text())
    return dict(data[CONVERSATION])


@pytest.fixture(scope="module")
def chat_model(locomo: dict[str, Any]) -> ChatModel:
    conversation = locomo["conversation"]
    return LocomoObservationModel(conversation[f"session_{SESSION}"], locomo["observation"][f"session_{SESSION}_observation"])


@pytest.fixture(scope="module")
def extracted(container: Container, locomo: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Session 1 sent as turn.completed events (two dialogue turns each) through the local queue."""
    conversation = locomo["conversation"]
    turns = conversation[f"session_{SESSION}"]
    occurred_at = _session_time(conversation[f"session_{SESSION}_date_time"])
    project_id = container.projects.get_or_create_project("acme").id
    memory_id = container.memories.create(project_id, name="conv-26").id
    queue = container.event_queue
    events = []
    for start in range(0, len(turns), 2):
        pair = turns[start : start + 2]
        event = turn_event(
            project_id=project_id, memory_id=memory_id, conversation_id=locomo["sample_id"],
            turn_id=pair[0]["dia_id"], occurred_at=occurred_at.isoformat(),
            messages=[{"role": "user", "name": t["speaker"], "content": t["text"]} for t in pair],
        )
        events.append(event)
        queue.submit(event)
    assert queue.drain(timeout=120)
    yield {"project_id": project_id, "memory_id": memory_id, "events": events, "turns": turns}
    queue.stop()


def test_every_turn_of_the_session_becomes_an_episode_and_its_observations_become_facts(
    container: Container, extracted: dict[str, Any], locomo: dict[str, Any], chat_model: LocomoObservationModel
) -> None:
    project_id, memory_id = extracted["project_id"], extracted["memory_id"]
    observations = [o for items in locomo["observation"][f"session_{SESSION}_observation"].values() for o in items]
    runs = [container.extraction_runs.get_by_event(project_id, e["id"]) for e in extracted["events"]]
    assert all(run is not None and run.status == "completed" for run in runs)
    assert chat_model.extraction_calls == len(extracted["events"]) == 9
    episodes = container.episodes.list_for_conversation(project_id, locomo["sample_id"])
    assert len(episodes) == 9 and all(e.has_embedding for e in episodes)
    assert episodes[0].transcript.startswith("Caroline (user): Hey Mel!")
    totals = {k: sum(run.summary[k] for run in runs) for k in ("candidates", "created", "updated", "skipped", "superseded")}
    assert totals["candidates"] == len(observations) == 7
    assert totals["created"] + totals["skipped"] == 7 and totals["created"] >= 6
    with container.database.connection() as conn:
        rows = conn.execute(
            "SELECT content, source_generation_id FROM memory_entries WHERE memory_id = %s AND source_type = 'extraction'",
            (memory_id,),
        ).fetchall()
    assert len(rows) == totals["created"]
    by_content = {r["content"]: r["source_generation_id"] for r in rows}
    # provenance: the LGBTQ support group fact (evidence D1:3) came from the turn starting at D1:3
    support = next(c for c in by_content if "LGBTQ support group" in c)
    assert by_content[support] == "D1:3"


def _episode_hits(api: ApiClient, extracted: dict[str, Any], query: str, limit: int = 3) -> list[str]:
    response = api.post("/v1/knowledge/search", {
        "query": query, "memory_ids": [extracted["memory_id"]], "include": ["episodes"], "limit": limit,
    })
    assert response.status == 200, response.json
    return [e["turn_id"] for e in response.json.get("episodes", [])]


def test_the_episodes_are_searchable_through_knowledge_search(
    extracted: dict[str, Any], locomo: dict[str, Any], api: ApiClient
) -> None:
    # Given the session's observations (LoCoMo's own facts, each with the turn it came from)
    turn_of = {t["dia_id"]: extracted["events"][i // 2]["detail"]["turn_id"] for i, t in enumerate(extracted["turns"])}
    observations = [o for items in locomo["observation"][f"session_{SESSION}_observation"].values() for o in items]
    # When each is searched with episodes included
    hits = sum(turn_of[evidence] in _episode_hits(api, extracted, content) for content, evidence in observations)
    # Then the episode holding its evidence turn is among the top 3 (of 9) for nearly all of them
    assert hits >= len(observations) - 1, f"evidence episode in top 3 for {hits}/{len(observations)} observations"
    # And a LoCoMo question finds the turn that answers it first
    assert _episode_hits(api, extracted, "When did Caroline go to the LGBTQ support group?")[0] == turn_of["D1:3"]


def test_the_episode_repository_finds_a_turn_by_meaning(container: Container, extracted: dict[str, Any]) -> None:
    vector = container.embedder.embed_query("Melanie painted a lake sunrise")
    hits = container.episodes.search_similar(extracted["project_id"], vector, memory_ids=[extracted["memory_id"]], limit=3)
    assert hits and "sunrise" in hits[0].episode.transcript.lower()
    assert hits == sorted(hits, key=lambda h: h.similarity, reverse=True)
    other = container.episodes.search_similar("proj_other", vector, limit=3)
    assert other == []  # tenant isolation
