"""The write funnel on the real database with the real local embedding model and a scripted
chat model (a ChatModel subclass): every decision branch, failure modes, locking."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psycopg
import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.entries import EntityRef, NewEntry
from memory_engine.domain.write_decision import AgentContext
from memory_engine.errors import ChatModelError, ChatModelNotConfigured, NotFound
from memory_engine.ports.chat import ChatModel
from memory_engine.services.memories import EntryReplacement, replace_entry
from memory_engine.services.write_entry import write_entry
from tests.support.api_client import ApiClient
from tests.support.memories import ALLERGY, ALLERGY_MORE, BLUE, GREEN, FailingEmbedder, ScriptedChat, write


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    return ScriptedChat()


@pytest.fixture
def chat(container: Container) -> ScriptedChat:
    model = container.chat_model
    assert isinstance(model, ScriptedChat)
    model.script(ChatModelError("unscripted"))
    return model


@pytest.fixture
def project_id(container: Container) -> str:
    return container.projects.get_or_create_project("acme").id


@pytest.fixture
def memory_id(container: Container, project_id: str) -> str:
    return container.memories.create(project_id, name="funnel").id  # type: ignore[no-any-return]


def _live(container: Container, project_id: str, memory_id: str) -> list[str]:
    items, _ = container.entries.list(project_id, memory_id=memory_id, limit=100)
    return [e.content for e in items]


def _write(container: Container, project_id: str, memory_id: str, content: str, *, agent: bool = False,
           threshold: float = 0.95, **fields: object):  # type: ignore[no-untyped-def]
    return write(container, project_id=project_id, entry=NewEntry(memory_id=memory_id, content=content, **fields),  # type: ignore[arg-type]
        duplicate_threshold=threshold, agent=AgentContext(model="judge-1") if agent else None,
    )


def test_duplicate_is_skipped_and_threshold_is_per_request(container: Container, project_id: str, memory_id: str,
                                                           chat: ScriptedChat) -> None:
    first = _write(container, project_id, memory_id, ALLERGY)
    dup = _write(container, project_id, memory_id, ALLERGY)
    assert first.action == "created" and dup.action == "skipped" and dup.entry.id == first.entry.id
    # a looser threshold skips a merely similar fact, even with an agent context (no model call)
    loose = _write(container, project_id, memory_id, ALLERGY_MORE, threshold=0.8, agent=True)
    assert loose.action == "skipped" and loose.entry.id == first.entry.id and chat.calls == []
    assert _live(container, project_id, memory_id) == [ALLERGY]


def test_the_same_sentence_is_a_duplicate_whatever_anchor_it_was_embedded_with(
        container: Container, project_id: str, memory_id: str, chat: ScriptedChat) -> None:
    # Given a fact written with entities (embedded anchor-enriched: "<fact>. About: Alice.")
    first = _write(container, project_id, memory_id, "Alice watches Breaking Bad on Netflix.",
                   entities=[EntityRef(name="Alice", type="person")])
    # When the same sentence is written again without entities (embedded bare)
    again = _write(container, project_id, memory_id, "Alice watches Breaking Bad on Netflix.")
    # Then it is skipped as the same fact, even at the strictest threshold
    strict = _write(container, project_id, memory_id, "Alice watches Breaking Bad on Netflix.", threshold=1.0)
    assert first.action == "created" and (again.action, strict.action) == ("skipped", "skipped")
    assert again.entry.id == strict.entry.id == first.entry.id


def test_manual_path_never_merges_even_when_the_model_would(container: Container, project_id: str, memory_id: str,
                                                            chat: ScriptedChat) -> None:
    chat.script(json.dumps({"decision": "merge", "content": "merged", "reason": "same"}))
    _write(container, project_id, memory_id, ALLERGY)
    second = _write(container, project_id, memory_id, ALLERGY_MORE, source_type="agent")  # no AgentContext
    assert second.action == "created" and chat.calls == []
    assert sorted(_live(container, project_id, memory_id)) == sorted([ALLERGY, ALLERGY_MORE])


def test_merge_rewrites_one_entry_unions_tags_merges_metadata_keeps_provenance(
    container: Container, embedder, project_id: str, memory_id: str, chat: ScriptedChat  # type: ignore[no-untyped-def]
) -> None:
    old = _write(container, project_id, memory_id, ALLERGY, tags=["health", "diet"], metadata={"a": 1, "b": 1},
                 source_conversation_id="conv-1", source_generation_id="turn-1").entry
    merged_text = "The user is allergic to peanuts and shellfish."
    chat.script('Sure! {"decision": "merge", "content": "  The user is allergic to\\npeanuts and shellfish. ", "reason": "adds"}')
    result = _write(container, project_id, memory_id, ALLERGY_MORE, agent=True, tags=["diet", "allergy"],
                    metadata={"b": 2, "c": 3}, source_conversation_id="conv-2", source_generation_id="turn-9")
    assert result.action == "updated" and result.entry.id == old.id
    entry = result.entry
    assert entry.content == merged_text
    assert entry.tags == ["health", "diet", "allergy"] and entry.metadata == {"a": 1, "b": 2, "c": 3}
    assert (entry.source_conversation_id, entry.source_generation_id) == ("conv-1", "turn-1")
    assert entry.updated_at > old.updated_at
    assert _live(container, project_id, memory_id) == [merged_text]
    # the model got the strict contract, both facts, and the agent's model id
    call = chat.calls[0]
    assert '"decision"' in str(call["system"]) and call["model"] == "judge-1"
    assert ALLERGY in call["messages"][0].content and ALLERGY_MORE in call["messages"][0].content  # type: ignore[index]
    # and the merged content was re-embedded
    with psycopg.connect(container.settings.database_url) as conn:
        stored = conn.execute("SELECT embedding::text FROM memory_entries WHERE id = %s", (old.id,)).fetchone()[0]  # type: ignore[index]
    vector = np.array(json.loads(stored), dtype=np.float32)
    assert float(vector @ embedder.embed_document(merged_text)) > 0.999


def test_contradiction_supersedes_and_history_stays_readable(
    container: Container, project_id: str, memory_id: str, chat: ScriptedChat, api: ApiClient
) -> None:
    old = _write(container, project_id, memory_id, BLUE, source_generation_id="turn-1").entry
    chat.script(json.dumps({"decision": "supersede", "reason": "favourite colour changed"}))
    result = _write(container, project_id, memory_id, GREEN, agent=True, source_generation_id="turn-2")
    assert result.action == "superseded" and result.superseded_entry_id == old.id
    assert result.entry.id != old.id and result.entry.content == GREEN and result.entry.source_generation_id == "turn-2"
    # listing hides the retired fact unless asked
    assert _live(container, project_id, memory_id) == [GREEN]
    listed = api.get("/v1/memory-entries", params={"memory_id": memory_id}).json["data"]
    assert [e["id"] for e in listed] == [result.entry.id]
    everything = api.get("/v1/memory-entries", params={"memory_id": memory_id, "include_invalidated": "true"}).json["data"]
    assert {e["id"] for e in everything} == {old.id, result.entry.id}
    # and the retired entry is readable by id with its reason and successor
    audit = api.get(f"/v1/memory-entries/{old.id}").json
    assert audit["invalidated_at"] is not None and audit["superseded_by_entry_id"] == result.entry.id
    assert audit["invalidation_reason"] == "favourite colour changed"
    # history is immutable
    assert api.put(f"/v1/memory-entries/{old.id}", {"content": "rewrite"}).status == 409
    # a retired fact is never a candidate: restating it creates a new entry
    chat.script(ChatModelError("down"))
    again = _write(container, project_id, memory_id, BLUE)
    assert again.action == "created" and again.entry.id != old.id


def test_distinct_verdict_creates(container: Container, project_id: str, memory_id: str, chat: ScriptedChat) -> None:
    _write(container, project_id, memory_id, ALLERGY)
    chat.script('{"decision": "distinct", "reason": "different allergens"}')
    result = _write(container, project_id, memory_id, ALLERGY_MORE, agent=True)
    assert result.action == "created" and len(chat.calls) == 1
    assert len(_live(container, project_id, memory_id)) == 2


@pytest.mark.parametrize(
    "reply",
    [
        ChatModelError("throttled"),
        ChatModelNotConfigured("no model configured"),
        TimeoutError("read timed out"),
        "",
        "   ",
        "I think they should be merged.",
        '{"decision": "merge"}',
        '{"decision": "merge", "content": "   "}',
        '{"decision": "obliterate", "content": "x"}',
        '["merge"]',
        '{"decision": "merge", "content": "unterminated',
    ],
)
def test_any_model_failure_creates(container: Container, project_id: str, memory_id: str, chat: ScriptedChat,
                                   reply: str | BaseException) -> None:
    first = _write(container, project_id, memory_id, ALLERGY).entry
    chat.script(reply)
    result = _write(container, project_id, memory_id, ALLERGY_MORE, agent=True)
    assert result.action == "created" and len(chat.calls) == 1
    assert sorted(_live(container, project_id, memory_id)) == sorted([ALLERGY, ALLERGY_MORE])
    assert container.entries.get(project_id, first.id).content == ALLERGY  # untouched


def test_below_the_merge_floor_creates_without_asking(container: Container, project_id: str, memory_id: str,
                                                      chat: ScriptedChat) -> None:
    _write(container, project_id, memory_id, ALLERGY)
    result = _write(container, project_id, memory_id, "The quarterly report is due on Friday.", agent=True)
    assert result.action == "created" and chat.calls == []


def test_a_verdict_on_a_candidate_that_changed_meanwhile_is_not_applied(
    container: Container, embedder, project_id: str, memory_id: str, chat: ScriptedChat  # type: ignore[no-untyped-def]
) -> None:
    # Given the model is slow and another writer edits the candidate while it thinks
    old = _write(container, project_id, memory_id, ALLERGY).entry

    def concurrent_edit() -> None:
        replace_entry(container.entries, embedder, project_id, old.id, EntryReplacement(tags=["edited"]))

    chat.script(json.dumps({"decision": "supersede", "reason": "stale"}), before_reply=concurrent_edit)
    # When the verdict comes back
    result = _write(container, project_id, memory_id, ALLERGY_MORE, agent=True)
    # Then it is not applied to the changed entry: the new fact is created, nothing is retired
    assert result.action == "created"
    assert container.entries.get(project_id, old.id).invalidated_at is None
    assert len(_live(container, project_id, memory_id)) == 2


def test_embedding_failure_still_stores_the_fact_and_exact_repeats_skip(
    container: Container, project_id: str, memory_id: str, chat: ScriptedChat
) -> None:
    failing = FailingEmbedder()
    entry = NewEntry(memory_id=memory_id, content="The office wifi password rotates monthly.")
    first = write_entry(container.entries, failing, chat, project_id=project_id, entry=entry)
    again = write_entry(container.entries, failing, chat, project_id=project_id, entry=entry, agent=AgentContext())
    assert first.action == "created" and again.action == "skipped" and again.entry.id == first.entry.id
    with psycopg.connect(container.settings.database_url) as conn:
        row = conn.execute("SELECT embedding IS NULL FROM memory_entries WHERE id = %s", (first.entry.id,)).fetchone()
    assert row == (True,)


def test_entities_are_normalized_linked_embedded_and_anchor_the_fact(
    container: Container, embedder, project_id: str, memory_id: str  # type: ignore[no-untyped-def]
) -> None:
    result = _write(
        container, project_id, memory_id, "Dana drives a Toyota Corolla hybrid", subject="Dana", predicate="drives",
        object="toyota corolla hybrid",
        entities=[EntityRef(name="  DANA ", type="person"), EntityRef(name="Toyota   Corolla Hybrid", type="car"),
                  EntityRef(name="dana")],
        confidence=0.8, source_quote="I drive a Corolla hybrid",
    )
    assert [(e.name, e.type, e.role) for e in result.entry.entities] == [
        ("DANA", "person", "subject"), ("Toyota Corolla Hybrid", "car", "object")]
    # a second fact about the same entity reuses it (per project), whatever the spelling
    _write(container, project_id, memory_id, "Dana was born in Lisbon.", entities=[EntityRef(name="dana")])
    with psycopg.connect(container.settings.database_url) as conn:
        entities = conn.execute(
            "SELECT name, display_name, embedding IS NOT NULL FROM entities WHERE project_id = %s AND name LIKE %s"
            " ORDER BY name", (project_id, "%dana%")).fetchall()
        links = conn.execute("SELECT count(*) FROM entry_entities l JOIN entities n ON n.id = l.entity_id"
                             " WHERE n.name = 'dana' AND n.project_id = %s", (project_id,)).fetchone()
        stored = conn.execute("SELECT embedding::text FROM memory_entries WHERE id = %s", (result.entry.id,)).fetchone()
    assert entities == [("dana", "DANA", True)] and links == (2,)
    # the fact is embedded anchor-enriched: "<fact>. About: <anchor>."
    vector = np.array(json.loads(stored[0]), dtype=np.float32)  # type: ignore[index]
    expected = embedder.embed_document("Dana drives a Toyota Corolla hybrid. About: DANA.")
    assert float(vector @ expected) > 0.999


def test_fifty_concurrent_identical_writes_create_exactly_one(container: Container, project_id: str,
                                                              memory_id: str) -> None:
    entry = NewEntry(memory_id=memory_id, content="The launch is scheduled for the third of March.")
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda _: write(container, project_id=project_id, entry=entry), range(50)))
    actions = [r.action for r in results]
    assert actions.count("created") == 1 and actions.count("skipped") == 49
    assert len({r.entry.id for r in results}) == 1
    with psycopg.connect(container.settings.database_url) as conn:
        count = conn.execute("SELECT count(*) FROM memory_entries WHERE memory_id = %s", (memory_id,)).fetchone()
    assert count == (1,)


def test_a_foreign_or_unknown_memory_is_not_found(container: Container, memory_id: str) -> None:
    other = container.projects.get_or_create_project("other-tenant").id
    with pytest.raises(NotFound):
        _write(container, other, memory_id, "sneaky fact")
    with pytest.raises(NotFound):
        _write(container, other, "mem_does_not_exist", "sneaky fact")


def test_a_long_fact_is_a_duplicate_only_as_the_same_text(container: Container, project_id: str, memory_id: str,
                                                           chat: ScriptedChat) -> None:
    # Given a fact longer than the model reads of a text (its vector reads only its opening)
    opening = "Step by step, the probability of drawing two aces in a row from a 52-card deck without replacement. " * 12
    first = _write(container, project_id, memory_id, opening + "By counting: C(4,2) / C(52,2) = 1/221.")
    # When another fact opens the same way and goes on differently
    other = _write(container, project_id, memory_id, opening + "By conditional probability: 4/52 * 3/51 = 1/221.")
    # Then both are stored (their vectors are alike, what the vectors did not read is not)
    assert first.action == other.action == "created"
    # while the same text again is a duplicate, however long
    again = _write(container, project_id, memory_id, opening + "By counting: C(4,2) / C(52,2) = 1/221.")
    assert again.action == "skipped" and again.entry.id == first.entry.id
    assert len(_live(container, project_id, memory_id)) == 2
