"""Search v2 on the real database and model: conversation context on writes, BM25, neighbours,
the subject and date features."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.entries import EntityRef, NewEntry
from memory_engine.domain.query_text import DateMention
from memory_engine.domain.search_config import HYBRID, PRESETS, Signal
from memory_engine.domain.search_models import MemoryScope, Scopes, SearchRequest, SignalQuery
from memory_engine.services.search_knowledge import search_knowledge
from tests.support.api_client import ApiClient
from tests.support.memories import write

MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
JUNE = datetime(2023, 6, 9, 19, 55, tzinfo=UTC)
CHAT = [  # (session date, speaker, turn); the answer turn names none of the question's words
    (MAY, "Melanie", "Hey Caroline! What did you get up to this weekend?"),
    (MAY, "Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    (MAY, "Melanie", "That's wonderful. What kind of job are you hoping to find afterwards?"),
    (MAY, "Caroline", "Something in counseling or mental health, to support people like me."),
    (JUNE, "Melanie", "I finally finished the painting of a sunrise over the lake!"),
    (JUNE, "Caroline", "Wow, the colours are gorgeous. Did you use oils?"),
    (JUNE, "Melanie", "Yes, oils on canvas, it took me three weekends."),
]


@pytest.fixture(scope="module")
def chat(container: Container) -> dict[str, Any]:
    project_id = container.projects.get_or_create_project("context").id
    memory_id = container.memories.create(project_id, name="chat").id
    ids = []
    for when, speaker, text in CHAT:
        session = "s1" if when == MAY else "s2"
        entry = NewEntry(memory_id=memory_id, content=text, subject=speaker, entities=[EntityRef(name=speaker)],
                         valid_from=when, source_conversation_id=f"chat/{session}")
        ids.append(write(container, project_id=project_id, entry=entry, duplicate_threshold=1.0).entry.id)
    return {"project_id": project_id, "memory_id": memory_id, "ids": ids}


def search(container: Container, chat: dict[str, Any], query: str, preset: str = "hybrid", limit: int = 3) -> list[str]:
    request = SearchRequest(query=query, memory_ids=[chat["memory_id"]], limit=limit, min_score=0)  # the ranking, not the floor
    response = search_knowledge(container.knowledge_index, container.embedder, project_id=chat["project_id"],
                                request=request, config=PRESETS[preset])
    return [r.id for r in response.results]


def test_a_turn_gets_the_previous_turn_of_its_conversation_as_context(container: Container, chat: dict[str, Any]) -> None:
    entries = [container.entries.get(chat["project_id"], entry_id) for entry_id in chat["ids"]]
    # each turn's context: the turn before it (embedded with it), then the turn after it (indexed)
    assert entries[0].context == f"Caroline: {CHAT[1][2]}"  # first turn: only the one after it
    assert entries[1].context == f"Melanie: {CHAT[0][2]}\nMelanie: {CHAT[2][2]}"
    assert entries[3].context == f"Melanie: {CHAT[2][2]}"  # last turn of its session
    assert entries[4].context == f"Caroline: {CHAT[5][2]}"  # a new session is a new conversation
    assert entries[6].context == f"Caroline: {CHAT[5][2]}"
    # appending the next turn is not an update of the fact
    assert entries[0].updated_at == entries[0].created_at


def test_caller_context_wins_and_extracted_facts_take_none(container: Container, chat: dict[str, Any]) -> None:
    memory_id = container.memories.create(chat["project_id"], name="context rules").id
    first = NewEntry(memory_id=memory_id, content="Can we meet tomorrow?", subject="Ann", source_conversation_id="c")
    write(container, project_id=chat["project_id"], entry=first)
    given = NewEntry(memory_id=memory_id, content="Sure, tomorrow works.", context="(a call, not the chat)",
                     source_conversation_id="c")
    assert write(container, project_id=chat["project_id"], entry=given).entry.context == "(a call, not the chat)"
    extracted = NewEntry(memory_id=memory_id, content="Ann meets Bob tomorrow.", source_type="extraction",
                         source_conversation_id="c")
    assert write(container, project_id=chat["project_id"], entry=extracted).entry.context is None
    alone = NewEntry(memory_id=memory_id, content="Ann likes tea.")
    assert write(container, project_id=chat["project_id"], entry=alone).entry.context is None


def test_context_is_indexed_for_keywords_at_half_weight(container: Container, chat: dict[str, Any]) -> None:
    # "weekend" is only in turn 0; turn 1 carries it through its context
    with container.database.connection() as conn:
        row = conn.execute(
            "SELECT (SELECT array_agg(w) FROM unnest(search_tsv) u, unnest(u.weights) w WHERE u.lexeme = 'weekend') AS w"
            " FROM memory_entries WHERE id = %s", (chat["ids"][1],),
        ).fetchone()
    assert row is not None and row["w"] == ["B"]


def test_the_answer_turn_is_found_through_its_question(container: Container, chat: dict[str, Any]) -> None:
    # The answer ("counseling or mental health") shares no word with the query; its context does
    got = search(container, chat, "What job is Caroline hoping to find?")
    assert chat["ids"][3] in got


def test_keyword_alone_ranks_by_bm25(container: Container, chat: dict[str, Any]) -> None:
    got = search(container, chat, "sunrise painting", preset="keyword_only")
    assert got[0] == chat["ids"][4]


def test_a_named_date_favours_facts_of_that_day(container: Container, chat: dict[str, Any]) -> None:
    # "weekend" is in both sessions' turns; the date picks June's
    got = search(container, chat, "What did Melanie do on 9 June, 2023?", limit=7)
    assert got.index(chat["ids"][4]) < got.index(chat["ids"][0])


def test_a_named_day_brings_its_facts_when_no_word_matches(container: Container, chat: dict[str, Any]) -> None:
    # no turn says "happened" or "June": only the date list (that day's facts) can find them
    request = SearchRequest(query="What happened on 9 June, 2023?", memory_ids=[chat["memory_id"]], limit=10, min_score=0,
                            signals=["keyword"])
    got = search_knowledge(container.knowledge_index, container.embedder, project_id=chat["project_id"],
                           request=request, config=HYBRID)
    assert {r.id for r in got.results} == set(chat["ids"][4:])
    assert all(r.signal_ranks == {} for r in got.results)  # the date list is a feature, not a signal
    without = search_knowledge(container.knowledge_index, container.embedder, project_id=chat["project_id"],
                               request=request, config=HYBRID.model_copy(update={"date_boost": 0.0}))
    assert without.results == []


@pytest.mark.parametrize("mention", [DateMention(2023, 6, 9), DateMention(2023, 6, None), DateMention(None, 6, None),
                                     DateMention(2023, None, None)])
def test_the_date_list_holds_the_named_periods_facts_nearest_first(
    container: Container, chat: dict[str, Any], mention: DateMention
) -> None:
    embedding = container.embedder.embed_query("oil painting of a sunrise")
    query = SignalQuery(text="painting", embedding=embedding, signals=frozenset(), depth=30, dates=(mention,))
    ranked = container.knowledge_index.signal_lists(chat["project_id"], query,
                                                    Scopes(MemoryScope(memory_ids=(chat["memory_id"],)), None))
    listed = [k[1] for k in ranked.lists[("memory", Signal.DATE)]]
    if mention.year is None or mention.month is not None:  # June: the second session only
        assert set(listed) == set(chat["ids"][4:])
        with container.database.connection() as conn:
            rows = conn.execute("SELECT id, embedding <=> %s::vector AS distance FROM memory_entries WHERE id = ANY(%s)",
                                (embedding, listed)).fetchall()
        distance = {row["id"]: row["distance"] for row in rows}
        assert listed == sorted(listed, key=lambda i: distance[i])  # nearest to the query first
    else:  # 2023: both sessions
        assert set(listed) == set(chat["ids"])


def test_without_an_embedding_the_date_list_is_most_recent_first(container: Container, chat: dict[str, Any]) -> None:
    query = SignalQuery(text="painting", embedding=None, signals=frozenset(), depth=30, dates=(DateMention(2023, 6, 9),))
    ranked = container.knowledge_index.signal_lists(chat["project_id"], query,
                                                    Scopes(MemoryScope(memory_ids=(chat["memory_id"],)), None))
    # the three June turns share their session's date: the last written first
    assert [k[1] for k in ranked.lists[("memory", Signal.DATE)]] == chat["ids"][6:3:-1]


def test_neighbours_are_read_even_when_no_signal_lists_them(container: Container, chat: dict[str, Any]) -> None:
    # keyword only: turn 6 ("Yes, oils on canvas ...", context: turn 5) matches none of these words
    request = SearchRequest(query="sunrise painting over the lake", memory_ids=[chat["memory_id"]], limit=10, min_score=0,
                            signals=["keyword"])
    response = search_knowledge(container.knowledge_index, container.embedder, project_id=chat["project_id"],
                                request=request, config=HYBRID)
    by_id = {r.id: r for r in response.results}
    assert response.results[0].id == chat["ids"][4]
    neighbour = by_id[chat["ids"][6]]  # two steps after the best match, read as its neighbour
    assert neighbour.signal_ranks == {} and neighbour.score > 0
    assert chat["ids"][0] not in by_id  # another session: never a neighbour


def test_the_api_takes_and_shows_context(api: ApiClient, container: Container) -> None:
    project_id = container.projects.get_or_create_project("acme").id
    memory_id = container.memories.create(project_id, name="api context").id
    body = {"memory_id": memory_id, "content": "Sure, tomorrow at ten works.", "context": "Bob: Can we meet tomorrow?"}
    created = api.post("/v1/memory-entries", body)
    assert created.status == 201, created.json
    assert created.json["context"] == "Bob: Can we meet tomorrow?"
    entry_id = created.json["id"]
    shown = api.get(f"/v1/memory-entries/{entry_id}").json
    assert shown["context"] == "Bob: Can we meet tomorrow?"
    too_long = api.post("/v1/memory-entries", body | {"context": "x" * 2_001})
    assert too_long.status == 422


@pytest.mark.parametrize("query", [
    "the and of a",  # stop words only: no lexeme at all
    "\"exact phrase\" -minus or other",  # websearch syntax
    "o'brien's café: naïve 東京 🙂",
    "a:b & c | !d <-> 'e'",  # tsquery operators as text
    "May 32, 2023 and 2023-13-45 in 1999",  # impossible dates
    "x" * 2_000,
])
def test_odd_queries_answer(container: Container, chat: dict[str, Any], query: str) -> None:
    for preset in ("hybrid", "keyword_only"):
        got = search(container, chat, query, preset=preset, limit=5)
        assert len(got) <= 5
