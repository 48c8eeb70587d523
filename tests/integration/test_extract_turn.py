"""extract_turn on the real PostgreSQL, the real local embedder and the real write funnel; the chat
model is a scripted fake (subclass of the port)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.events import TurnCompletedEvent
from memory_engine.domain.turns import window_spans
from memory_engine.errors import ChatModelError, NotFound
from memory_engine.ports.chat import ChatModel
from memory_engine.services.extract_turn import (
    NO_MODEL_ERROR,
    ExtractionDeps,
    ExtractionFailed,
    RunInProgress,
    consume_turn_event,
    extract_turn,
)
from tests.support.api_client import ApiClient
from tests.support.extraction import ScriptedChatModel, fact, turn_event

LISBON = fact("Sam moved to Lisbon in April 2023.", "Sam", "moved to", "Lisbon", ("Sam", "person"), ("Lisbon", "place"),
              valid_from="2023-04-01", source_quote="I moved to Lisbon last month")
NURSE = fact("Sam works at Acme as a nurse.", "Sam", "works at", "Acme", ("Sam", "person"), ("Acme", "organization"),
             confidence=0.95, source_quote="I work at Acme as a nurse")


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    return ScriptedChatModel()


@pytest.fixture(scope="module", autouse=True)
def _stop_the_local_queue(container: Container) -> Iterator[None]:
    """The queue's worker must not outlive this module's container."""
    yield
    container.event_queue.drain(timeout=30)
    container.event_queue.stop()


@pytest.fixture
def chat(container: Container) -> ScriptedChatModel:
    model = container.chat_model
    assert isinstance(model, ScriptedChatModel)
    return model.script()


@pytest.fixture(scope="module")
def project_id(container: Container) -> str:
    return str(container.projects.get_or_create_project("acme").id)


@pytest.fixture
def memory_id(container: Container, project_id: str) -> str:
    return str(container.memories.create(project_id, name="sam").id)


@pytest.fixture
def deps(container: Container) -> ExtractionDeps:
    deps: ExtractionDeps = container.extraction
    return deps


def _event(project_id: str, memory_id: str, **kw: Any) -> TurnCompletedEvent:
    return TurnCompletedEvent.model_validate(turn_event(project_id=project_id, memory_id=memory_id, **kw))


def _entries(container: Container, memory_id: str) -> list[dict[str, Any]]:
    with container.database.connection() as conn:
        rows = conn.execute(
            """SELECT e.*, coalesce(json_agg(json_build_object('name', n.display_name, 'type', n.type, 'role', l.role)
                                             ORDER BY n.display_name, l.role) FILTER (WHERE n.id IS NOT NULL), '[]') AS ents
                 FROM memory_entries e
                 LEFT JOIN entry_entities l ON l.entry_id = e.id LEFT JOIN entities n ON n.id = l.entity_id
                WHERE e.memory_id = %s GROUP BY e.id ORDER BY e.created_at, e.id""",
            (memory_id,),
        ).fetchall()
    return list(rows)


def _episodes(container: Container, memory_id: str) -> list[dict[str, Any]]:
    with container.database.connection() as conn:
        return list(conn.execute(
            "SELECT *, embedding IS NOT NULL AS embedded FROM episodes WHERE memory_id = %s", (memory_id,)
        ).fetchall())


def test_a_turn_produces_an_episode_facts_with_entities_and_provenance_and_a_run_summary(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    # Given a model that finds two facts in the turn
    chat.script(json.dumps([LISBON, NURSE]))
    event = _event(project_id, memory_id, conversation_id="conv-7", turn_id="gen-7")
    # When the turn is extracted
    result = extract_turn(event, deps)
    # Then the turn is stored as an embedded episode linked to its conversation, turn and event
    (episode,) = _episodes(container, memory_id)
    assert (episode["conversation_id"], episode["turn_id"], episode["event_id"]) == ("conv-7", "gen-7", event.id)
    assert episode["embedded"] and "user: Hi! I moved to Lisbon last month." in episode["transcript"]
    assert episode["messages"][0] == {"role": "user", "content": "Hi! I moved to Lisbon last month. I work at Acme as a nurse."}
    # And both facts are stored with their structure, entities and provenance
    rows = _entries(container, memory_id)
    assert [r["content"] for r in rows] == [LISBON["content"], NURSE["content"]]
    lisbon, nurse = rows
    assert (lisbon["subject"], lisbon["predicate"], lisbon["object"]) == ("Sam", "moved to", "Lisbon")
    assert lisbon["valid_from"] == datetime(2023, 4, 1, tzinfo=UTC)
    assert lisbon["source_quote"] == "I moved to Lisbon last month"
    assert nurse["confidence"] == pytest.approx(0.95)
    assert {(e["name"], e["type"]) for e in nurse["ents"]} >= {("Sam", "person"), ("Acme", "organization")}
    for row in rows:
        assert row["source_type"] == "extraction"
        assert (row["source_conversation_id"], row["source_generation_id"], row["source_event_id"]) == (
            "conv-7", "gen-7", event.id)
    # And the run records the summary, and the completion event is published with it
    assert result.status == "completed"
    run = container.extraction_runs.get_by_event(project_id, event.id)
    assert run.status == "completed" and run.episode_id == episode["id"] and run.attempts == 1
    assert {k: run.summary[k] for k in ("candidates", "created", "updated", "skipped", "superseded")} == {
        "candidates": 2, "created": 2, "updated": 0, "skipped": 0, "superseded": 0}
    assert run.summary["prompt_version"] == "extraction_v1"
    published = container.event_publisher.events[-1]
    assert published["detail-type"] == "memory.extraction.completed"
    assert published["detail"]["run_id"] == run.id and published["detail"]["status"] == "completed"
    assert published["detail"]["summary"]["created"] == 2 and published["detail"]["event_id"] == event.id


def test_the_model_is_asked_tool_less_with_the_prompt_the_dated_transcript_and_a_timeout(
    chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    chat.script("[]")
    extract_turn(_event(project_id, memory_id), deps)
    (call,) = chat.extraction_calls
    assert call.system is not None and "Atomic" in call.system and "Respond with a JSON array" in call.system
    assert "Monday, 8 May 2023, 13:56 UTC" in call.user and "<transcript>" in call.user
    assert "I work at Acme as a nurse." in call.user
    assert call.timeout == deps.settings.model_timeout and call.model is None


def test_a_custom_prompt_replaces_the_task_but_keeps_the_contract_and_the_model_override_reaches_the_funnel(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    chat.script("[]")
    event = _event(project_id, memory_id, extraction={"prompt": "Extract only where Sam lives.", "model": "tiny-model"})
    extract_turn(event, deps)
    (call,) = chat.extraction_calls
    assert call.system is not None and call.system.startswith("Extract only where Sam lives.")
    assert "Atomic" not in call.system and "Respond with a JSON array" in call.system
    assert call.model == "tiny-model"
    assert container.extraction_runs.get_by_event(project_id, event.id).summary["prompt_version"] is None


def test_the_same_event_delivered_twice_gives_one_episode_and_one_set_of_facts(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    # Given an event that was extracted once
    chat.script(json.dumps([LISBON, NURSE]), json.dumps([LISBON, NURSE]))
    event = _event(project_id, memory_id)
    first = extract_turn(event, deps)
    # When it is delivered again
    second = consume_turn_event(event, deps)
    # Then nothing happens: no model call, no second episode, no new facts
    assert first.status == "completed" and second.status == "duplicate"
    assert len(chat.extraction_calls) == 1
    assert len(_episodes(container, memory_id)) == 1 and len(_entries(container, memory_id)) == 2
    assert second.summary.created == 2 and second.run.id == first.run.id


def test_twenty_five_facts_are_capped_at_twenty(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    hobbies = ["chess", "rowing", "pottery", "salsa", "birding", "fencing", "origami", "karaoke", "sailing", "judo",
               "archery", "baking", "cycling", "knitting", "surfing", "yoga", "climbing", "tango", "gardening",
               "juggling", "skiing", "poetry", "golf", "boxing", "kayaking"]
    chat.script(json.dumps([f"Sam took up {h} in {1990 + i}." for i, h in enumerate(hobbies)]))
    result = extract_turn(_event(project_id, memory_id), deps)
    assert len(_entries(container, memory_id)) == 20
    assert (result.summary.candidates, result.summary.created, result.summary.discarded) == (20, 20, 5)


def test_malformed_model_output_keeps_what_can_be_read(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    # Given a chatty reply: prose around a fenced array, trailing commas, a bare string, objects missing fields
    reply = (
        "Here is what I extracted from the conversation:\n```json\n[\n"
        '  {"content": "Sam moved to Lisbon in April 2023.", "entities": [{"name": "Sam"}, {"name": "Lisbon"},],},\n'
        '  "Sam works at Acme as a nurse.",\n'
        '  {"subject": "Sam", "predicate": "likes"},\n'
        '  {"confidence": 0.9},\n'
        '  {"content": "Sam has a cat named Miso.", "confidence": "very high", "valid_from": "sometime"},\n'
        "]\n```\nI skipped the greetings."
    )
    chat.script(reply)
    # When extracted
    result = extract_turn(_event(project_id, memory_id), deps)
    # Then the three readable facts are written and the two incomplete objects are discarded
    assert [r["content"] for r in _entries(container, memory_id)] == [
        "Sam moved to Lisbon in April 2023.", "Sam works at Acme as a nurse.", "Sam has a cat named Miso."]
    assert (result.status, result.summary.candidates, result.summary.created, result.summary.discarded) == (
        "completed", 3, 3, 2)
    cat = _entries(container, memory_id)[-1]
    assert cat["confidence"] == pytest.approx(1.0) and cat["valid_from"] is None


def test_a_reply_without_json_completes_with_no_facts(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    chat.script("I'm sorry, I can't find anything worth remembering here.")
    result = extract_turn(_event(project_id, memory_id), deps)
    assert result.status == "completed" and result.summary.candidates == 0
    assert len(_episodes(container, memory_id)) == 1 and _entries(container, memory_id) == []


def test_a_contradicting_fact_supersedes_the_old_one_and_a_restated_fact_is_skipped(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    # Given Sam's employer from an earlier turn
    old = fact("Sam works at Acme as a nurse.", "Sam", "works at", "Acme", ("Sam", "person"), ("Acme", "organization"))
    chat.script(json.dumps([old]))
    extract_turn(_event(project_id, memory_id, turn_id="t1"), deps)
    # When a later turn says Sam changed jobs (the funnel's arbiter judges a contradiction) and restates a fact
    new = fact("Sam works at Globex as a nurse.", "Sam", "works at", "Globex", ("Sam", "person"), ("Globex", "organization"))
    chat.script(json.dumps([new]),
                arbiter=lambda existing, incoming: '{"decision": "supersede", "reason": "Sam changed employer"}')
    second = extract_turn(_event(project_id, memory_id, turn_id="t2", occurred_at="2023-06-01T10:00:00Z"), deps)
    # Then the old fact is retired and points at its replacement
    assert chat.arbitrations == [(old["content"], new["content"])]
    assert second.summary.superseded == 1 and second.summary.created == 0
    rows = {r["content"]: r for r in _entries(container, memory_id)}
    retired, current = rows[old["content"]], rows[new["content"]]
    assert retired["invalidated_at"] is not None and retired["superseded_by_entry_id"] == current["id"]
    assert current["invalidated_at"] is None and current["source_generation_id"] == "t2"
    # And when a third turn restates the current fact word for word, it is skipped
    chat.script(json.dumps([new]))
    third = extract_turn(_event(project_id, memory_id, turn_id="t3"), deps)
    assert (third.summary.skipped, third.summary.created) == (1, 0)
    assert len([r for r in _entries(container, memory_id) if r["invalidated_at"] is None]) == 1


def test_a_model_failure_keeps_the_episode_fails_the_run_and_a_redelivery_retries_it(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    # Given a model that times out once, then answers
    chat.script(ChatModelError("Bedrock Converse failed: Read timeout on endpoint URL"), json.dumps([NURSE]))
    event = _event(project_id, memory_id)
    # When the consumer runs the event, the failure is raised for the queue to redeliver
    with pytest.raises(ExtractionFailed, match="Read timeout"):
        consume_turn_event(event, deps)
    # Then the episode is stored and the run is failed with the error
    assert len(_episodes(container, memory_id)) == 1 and _entries(container, memory_id) == []
    run = container.extraction_runs.get_by_event(project_id, event.id)
    assert run.status == "failed" and "Read timeout" in (run.error or "") and run.attempts == 1
    assert container.event_publisher.events[-1]["detail"]["status"] == "failed"
    # When the queue redelivers it, only the extraction is retried
    result = consume_turn_event(event, deps)
    assert result.status == "completed" and result.run.attempts == 2 and result.run.error is None
    assert len(_episodes(container, memory_id)) == 1 and len(_entries(container, memory_id)) == 1


def test_without_a_model_the_episode_is_stored_and_the_run_records_no_model_configured(
    container: Container, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    from dataclasses import replace

    from memory_engine.ports.chat import NoChatModel

    no_model = replace(deps, chat=NoChatModel())
    event = _event(project_id, memory_id)
    result = consume_turn_event(event, no_model)  # not raised: retrying cannot help
    assert result.status == "failed" and result.error == NO_MODEL_ERROR and not result.retryable
    assert len(_episodes(container, memory_id)) == 1
    assert container.extraction_runs.get_by_event(project_id, event.id).error == "no model configured"


def test_extract_false_stores_the_episode_only(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    result = extract_turn(_event(project_id, memory_id, extract=False), deps)
    assert result.status == "completed" and result.summary.extract is False and result.summary.candidates == 0
    assert chat.calls == [] and len(_episodes(container, memory_id)) == 1


def test_an_event_for_another_projects_memory_is_not_found_and_stores_nothing(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    other = container.projects.get_or_create_project("globex").id
    for event in (_event(other, memory_id), _event(project_id, "mem_doesnotexist")):
        with pytest.raises(NotFound):
            consume_turn_event(event, deps)
        assert container.extraction_runs.get_by_event(event.detail.project_id, event.id) is None
    assert _episodes(container, memory_id) == [] and chat.calls == []


def test_a_run_held_by_a_live_worker_is_left_alone_and_a_stale_one_is_taken_over(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    from memory_engine.ports.extraction_runs import RunKey

    event = _event(project_id, memory_id)
    d = event.detail
    container.extraction_runs.claim(RunKey(project_id, event.id, memory_id, d.conversation_id, d.turn_id),
                                    stale_after=timedelta(minutes=15))  # another worker started it
    with pytest.raises(RunInProgress):
        consume_turn_event(event, deps)
    with container.database.connection() as conn:  # that worker died 20 minutes ago
        conn.execute("UPDATE extraction_runs SET updated_at = now() - interval '20 minutes' WHERE event_id = %s",
                     (event.id,))
    chat.script("[]")
    result = consume_turn_event(event, deps)
    assert result.status == "completed" and result.run.attempts == 2


# --- POST /v1/events (the local EventBridge stand-in) ---


def test_post_events_queues_the_event_for_the_same_consumer(
    container: Container, chat: ScriptedChatModel, api: ApiClient, project_id: str, memory_id: str
) -> None:
    chat.script(json.dumps([NURSE]))
    body = turn_event(project_id=project_id, memory_id=memory_id)
    for field in ("id", "version", "account", "time", "region", "resources"):
        body.pop(field)  # the bus assigns these
    response = api.post("/v1/events", body)
    assert response.status == 202, response.json
    event_id = response.json["id"]
    assert container.event_queue.wait(response.json["message_id"], timeout=60) == "succeeded"
    run = container.extraction_runs.get_by_event(project_id, event_id)
    assert run.status == "completed" and run.summary["created"] == 1


def test_post_events_with_wait_answers_with_the_run(
    chat: ScriptedChatModel, api: ApiClient, project_id: str, memory_id: str
) -> None:
    chat.script(json.dumps([LISBON]))
    response = api.post("/v1/events", turn_event(project_id=project_id, memory_id=memory_id), params={"wait": "true"})
    assert response.status == 200, response.json
    assert response.json["status"] == "succeeded" and response.json["run"]["status"] == "completed"
    assert response.json["run"]["summary"]["created"] == 1


def test_post_events_rejects_bad_events_other_projects_and_read_only_keys(
    make_key: Any, api: ApiClient, container: Container, project_id: str, memory_id: str
) -> None:
    good = turn_event(project_id=project_id, memory_id=memory_id)
    invalid = turn_event(project_id=project_id, memory_id=memory_id, extact=False)
    response = api.post("/v1/events", invalid)
    assert response.status == 422 and any(d["field"] == "detail.extact" for d in response.json["error"]["details"])
    assert api.post("/v1/events", [good]).status == 422
    other_key = make_key("globex", "read,write")
    assert api.with_key(other_key).post("/v1/events", good).status == 404  # another project's event
    missing = turn_event(project_id=project_id, memory_id="mem_missing")
    assert api.post("/v1/events", missing).status == 404
    assert api.with_key(make_key("acme", "read")).post("/v1/events", good).status == 403
    assert api.with_key(None).post("/v1/events", good).status == 401


def test_a_run_out_of_time_stops_between_facts_and_a_redelivery_writes_the_rest(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    from dataclasses import replace

    # Given a clock where every reading is 10 s later, and a deadline 55 s away
    ticks = iter(range(0, 10_000, 10))
    slow = replace(deps, clock=lambda: float(next(ticks)))
    facts = [f"Sam visited {city} in 2019." for city in ("Oslo", "Quito", "Hanoi", "Lima", "Accra", "Perth")]
    chat.script(json.dumps(facts), json.dumps(facts))
    event = _event(project_id, memory_id)
    # When the consumer runs it, the model gets at most the time left and the run stops in time
    with pytest.raises(ExtractionFailed, match="time budget exhausted after 3 of 6 facts"):
        consume_turn_event(event, slow, deadline=55.0)
    assert chat.extraction_calls[0].timeout == 50.0  # 55 s left, minus the 5 s reserve
    assert len(_entries(container, memory_id)) == 3
    # Then a redelivery (no time pressure) writes the remaining facts; the first three are duplicates
    result = consume_turn_event(event, deps)
    assert (result.summary.created, result.summary.skipped) == (3, 3)
    assert len(_entries(container, memory_id)) == 6


def test_an_events_long_turn_is_embedded_in_windows_that_cover_it(
    container: Container, chat: ScriptedChatModel, deps: ExtractionDeps, project_id: str, memory_id: str
) -> None:
    # Given a turn.completed event whose message is 5,000 characters long
    chat.script("[]")
    long = " ".join(f"sentence {i} about the migration plan." for i in range(160))
    result = extract_turn(_event(project_id, memory_id, messages=[{"role": "user", "content": long}]), deps)
    # Then its episode has a vector window for every part of the transcript, the turns endpoint's windows
    with container.database.connection() as conn:
        spans = [(r["start_char"], r["end_char"]) for r in conn.execute(
            "SELECT start_char, end_char FROM episode_windows WHERE episode_id = %s ORDER BY window_index",
            (result.episode.id,)).fetchall()]
    assert len(spans) >= 5 and spans == window_spans(result.episode.transcript)
