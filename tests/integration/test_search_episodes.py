"""Episodes in the fused search (``include: ["episodes"]``): conversation turns recorded through
``POST /v1/memories/{memory_id}/turns`` are ranked among the results by every signal over the
whole turn (BM25 over the full transcript, vectors over windows that cover it), with their turn's
fields, only those of the searched memories of the caller's project."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.entities import EMBED_WINDOW_CHARS
from memory_engine.domain.turns import window_spans
from memory_engine.ports.chat import ChatModel
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient
from tests.support.extraction import ScriptedChatModel

SEARCH = "/v1/knowledge/search"

GARDEN = (
    "The tomatoes in the north bed want water every morning before the sun is high.",
    "Basil grows best beside the peppers, and the mint stays in its own pot.",
    "We mulch the raspberries with straw in late autumn so the roots stay warm.",
    "The compost heap needs turning every other week, more often when it smells.",
    "Slugs ate half the lettuce again; copper tape around the bed helped a little.",
)


def garden_text(chars: int) -> str:
    """Plain gardening sentences, about ``chars`` long: what a turn says before its point."""
    out: list[str] = []
    for sentence in itertools.cycle(GARDEN):
        if sum(len(s) + 1 for s in out) >= chars:
            return " ".join(out)
        out.append(sentence)
    return ""  # unreachable


#: A rare word in the last window of a long turn, and a topic far from gardening in a later one.
KEYWORD = "zanzibarite"
KEYWORD_TURN = f"{garden_text(4_000)} Finally, the bag of {KEYWORD} crystals goes on the shelf in the shed."
CLUSTER = ("The kubernetes cluster ran out of memory overnight, so the scheduler evicted the payment pods"
           " and the on-call engineer had to add two more nodes to the node pool.")
VECTOR_TURN = f"{garden_text(3_000)} {CLUSTER} {garden_text(1_500)}"


@pytest.fixture(scope="module")
def chat_model() -> ChatModel:
    return ScriptedChatModel()


def record(api: ApiClient, memory_id: str, conversation_id: str, turns: list[dict[str, Any]]) -> list[str]:
    response = api.post(f"/v1/memories/{memory_id}/turns", {"conversation_id": conversation_id, "turns": turns})
    assert response.status == 201, response.json
    return [turn["id"] for turn in response.json["turns"]]


@pytest.fixture(scope="module")
def world(api: ApiClient, make_key: KeyFactory) -> dict[str, Any]:
    chat = str(api.post("/v1/memories", {"name": "chat", "tags": ["kind:chat"]}).json["id"])
    other = str(api.post("/v1/memories", {"name": "other chat"}).json["id"])
    w: dict[str, Any] = {"chat": chat, "other": other}
    w["keyword"], w["vector"], w["short"], w["reply"] = record(api, chat, "conv-1", [
        {"turn_id": "t-1", "role": "user", "content": KEYWORD_TURN, "occurred_at": "2024-03-01T10:00:00Z"},
        {"turn_id": "t-2", "role": "assistant", "content": VECTOR_TURN, "occurred_at": "2024-03-01T10:01:00Z"},
        {"turn_id": "t-3", "role": "user", "content": "My sister Ingrid moves to Trondheim in June.",
         "occurred_at": "2024-03-01T10:02:00Z", "metadata": {"channel": "sms"}},
        {"turn_id": "t-4", "role": "assistant", "content": "Noted, Trondheim in June.",
         "occurred_at": "2024-03-01T10:03:00Z"},
    ])
    # the same words in a memory not searched, and in another project
    w["unscoped"] = record(api, other, "conv-x", [{"role": "user", "content": f"{KEYWORD} and Ingrid in Trondheim"}])[0]
    globex = ApiClient(make_key("globex", "read,write"))
    foreign = str(globex.post("/v1/memories", {"name": "chat"}).json["id"])
    w["foreign"] = record(globex, foreign, "conv-1", [{"role": "user", "content": f"{KEYWORD} and Ingrid in Trondheim"}])[0]
    return w


def search(api: ApiClient, **body: Any) -> dict[str, Any]:
    response = api.post(SEARCH, body)
    assert response.status == 200, response.json
    return response.json  # type: ignore[no-any-return]


def episodes_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in body["results"] if r["source_type"] == "episode"]


def test_a_long_turn_is_found_by_a_word_in_its_last_window(api: ApiClient, world: dict[str, Any]) -> None:
    # Given a 4,000-character turn whose rare word is in its last window only
    assert KEYWORD_TURN.index(KEYWORD) > 3 * EMBED_WINDOW_CHARS and len(window_spans(f"user: {KEYWORD_TURN}")) >= 4
    # When it is searched by that word alone
    body = search(api, query=KEYWORD, memory_ids=[world["chat"]], include=["episodes"], signals=["keyword"])
    # Then the turn is the first result, showing the passage that holds the word
    first = body["results"][0]
    assert (first["source_type"], first["id"]) == ("episode", world["keyword"]), body
    assert KEYWORD in first["content"] and len(first["content"]) <= EMBED_WINDOW_CHARS, first["content"]
    assert first["signal_ranks"] == {"keyword": 1} and first["score"] > 0


def test_a_long_turn_is_found_by_meaning_in_a_later_window(api: ApiClient, world: dict[str, Any]) -> None:
    # Given a turn about gardening whose third window is about a kubernetes outage
    start = VECTOR_TURN.index(CLUSTER)
    assert start > 2 * EMBED_WINDOW_CHARS
    # When it is searched by meaning alone
    body = search(api, query="pods evicted when the kubernetes cluster ran out of memory", memory_ids=[world["chat"]],
                  include=["episodes"], signals=["vector"], min_score=0)
    # Then the turn ranks first by that window's cosine, and shows that window
    first = body["results"][0]
    assert (first["source_type"], first["id"]) == ("episode", world["vector"]), body
    assert "evicted" in first["content"], first["content"]
    assert first["signal_ranks"] == {"vector": 1} and first["similarity_score"] > 0.3
    # where the turn's first window alone (its own vector: the deprecated list's) reads nothing of it
    own = {e["id"]: e["similarity_score"] for e in body["episodes"]}
    assert own[world["vector"]] < 0.2 < first["similarity_score"] - 0.1, own


def test_an_episode_result_carries_its_turn(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query="where is Ingrid moving?", memory_ids=[world["chat"]], include=["episodes"])
    first = body["results"][0]
    assert first["id"] == world["short"], body
    assert {k: first[k] for k in ("source_type", "memory_id", "conversation_id", "turn_id", "role", "metadata")} == {
        "source_type": "episode", "memory_id": world["chat"], "conversation_id": "conv-1", "turn_id": "t-3",
        "role": "user", "metadata": {"channel": "sms"}}
    assert first["occurred_at"].startswith("2024-03-01T10:02:00") and first["created_at"]
    assert first["content"] == "user: My sister Ingrid moves to Trondheim in June."
    assert 0 < first["score"] <= 1 and first["similarity_score"] > 0 and set(first["signal_ranks"]) >= {"vector", "keyword"}
    # the reply right after it in the conversation is ranked too
    assert world["reply"] in [r["id"] for r in body["results"]]
    # the deprecated list is still there for earlier clients
    assert world["short"] in [e["id"] for e in body["episodes"]]


def test_only_the_searched_memories_of_the_project_are_read(api: ApiClient, world: dict[str, Any]) -> None:
    for body in (search(api, query=f"{KEYWORD} Ingrid Trondheim", memory_ids=[world["chat"]], include=["episodes"]),
                 search(api, query=f"{KEYWORD} Ingrid Trondheim", memory_tags=["kind:*"], include=["episodes"])):
        found = {r["id"] for r in episodes_of(body)}
        assert found and found <= {world["keyword"], world["vector"], world["short"], world["reply"]}, body
    both = search(api, query=f"{KEYWORD} Ingrid Trondheim", memory_ids=[world["chat"], world["other"]],
                  include=["episodes"], min_score=0)
    found = {r["id"] for r in episodes_of(both)}
    assert world["unscoped"] in found and world["foreign"] not in found


def test_episodes_are_searched_only_when_included(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query=f"{KEYWORD} Ingrid Trondheim", memory_ids=[world["chat"]], min_score=0)
    assert episodes_of(body) == [] and "episodes" not in body


def test_the_default_floor_empties_an_unrelated_query(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query="quantum chromodynamics lattice", memory_ids=[world["chat"]], include=["episodes"],
                  render=True)
    assert body["results"] == [] and body["context"] == ""
    assert episodes_of(search(api, query="quantum chromodynamics lattice", memory_ids=[world["chat"]],
                              include=["episodes"], min_score=0))


def test_render_tags_episode_lines(api: ApiClient, world: dict[str, Any]) -> None:
    body = search(api, query="where is Ingrid moving?", memory_ids=[world["chat"]], include=["episodes"], render=True)
    assert "- user: My sister Ingrid moves to Trondheim in June. [Episode: conv-1/t-3] (2024-03-01)" in body["context"]
    assert "## conversation conv-1" in body["context"]


def test_a_deleted_turn_is_no_longer_found(api: ApiClient, container: Container) -> None:
    memory_id = str(api.post("/v1/memories", {"name": "short lived"}).json["id"])
    turn = record(api, memory_id, "conv-d", [{"turn_id": "gone", "role": "user", "content": f"the {KEYWORD} is gone"}])[0]
    before = search(api, query=KEYWORD, memory_ids=[memory_id], include=["episodes"])
    assert [r["id"] for r in episodes_of(before)] == [turn]
    assert api.delete(f"/v1/memories/{memory_id}/turns/gone", params={"conversation_id": "conv-d"}).status == 204
    assert episodes_of(search(api, query=KEYWORD, memory_ids=[memory_id], include=["episodes"], min_score=0)) == []
    with container.database.connection() as conn:
        row = conn.execute("SELECT count(*) AS n FROM episode_windows WHERE episode_id = %s", (turn,)).fetchone()
    assert row is not None and row["n"] == 0


def test_windows_cover_the_whole_turn(container: Container, world: dict[str, Any]) -> None:
    with container.database.connection() as conn:
        rows = conn.execute("SELECT w.start_char, w.end_char, e.transcript FROM episode_windows w"
                            " JOIN episodes e ON e.id = w.episode_id WHERE w.episode_id = %s ORDER BY w.window_index",
                            (world["keyword"],)).fetchall()
    transcript = rows[0]["transcript"]
    assert [(r["start_char"], r["end_char"]) for r in rows] == window_spans(transcript)
    assert rows[0]["start_char"] == 0 and rows[-1]["end_char"] == len(transcript)


def test_as_of_reads_the_turns_said_by_then(api: ApiClient, world: dict[str, Any]) -> None:
    before = search(api, query="where is Ingrid moving?", memory_ids=[world["chat"]], include=["episodes"],
                    as_of="2024-03-01T10:02:30Z", min_score=0)
    earlier = search(api, query="where is Ingrid moving?", memory_ids=[world["chat"]], include=["episodes"],
                     as_of="2024-03-01T10:01:30Z", min_score=0)
    assert world["short"] in {r["id"] for r in episodes_of(before)}
    assert {r["id"] for r in episodes_of(earlier)} <= {world["keyword"], world["vector"]}, earlier


def test_a_turn_that_opens_with_its_speaker_is_about_that_speaker(api: ApiClient) -> None:
    # Given a conversation written as "<speaker>: <text>" turns, where the other speaker's turn holds
    # more of the question's words than the answer does
    memory = str(api.post("/v1/memories", {"name": "painters"}).json["id"])
    answer, other = record(api, memory, "conv-p", [
        {"turn_id": "p-1", "role": "user", "content": "Caroline: I painted the lake at sunrise last week."},
        {"turn_id": "p-2", "role": "assistant",
         "content": "Melanie: Caroline painted the lake? I painted that lake at sunrise too, I paint it every week."},
    ])
    ranked = lambda body: [r["id"] for r in episodes_of(body)]  # noqa: E731
    # When the question names the speaker
    body = search(api, query="What did Caroline paint?", memory_ids=[memory], include=["episodes"], min_score=0)
    # Then the turn she said ranks above the one that only mentions her (a fact written with her
    # as its subject is lifted the same way)
    assert ranked(body)[0] == answer and ranked(body).index(other) > 0, body
    # and a question naming the other speaker puts her turn first
    body = search(api, query="What did Melanie paint?", memory_ids=[memory], include=["episodes"], min_score=0)
    assert ranked(body)[0] == other, body


def test_a_short_reply_is_found_by_the_turn_it_answers(api: ApiClient) -> None:
    # Given a reply that holds none of the question's words, after the turn that asked
    memory = str(api.post("/v1/memories", {"name": "plumbing"}).json["id"])
    question, reply, later = record(api, memory, "conv-q", [
        {"turn_id": "q-1", "role": "user", "content": "Which day did the plumber fix the boiler?",
         "occurred_at": "2024-03-01T10:00:00Z"},
        {"turn_id": "q-2", "role": "assistant", "content": "Tuesday, at nine.", "occurred_at": "2024-03-01T10:01:00Z"},
        {"turn_id": "q-3", "role": "user", "content": "Thanks, noted.", "occurred_at": "2024-03-01T10:02:00Z"},
    ])
    keyword = {"query": "plumber boiler", "memory_ids": [memory], "include": ["episodes"], "signals": ["keyword"],
               "min_score": 0}
    def listed(body: dict[str, Any]) -> dict[str, int]:
        """The episodes the keyword list holds, by rank (the page also holds their neighbours)."""
        return {r["id"]: r["signal_ranks"]["keyword"] for r in episodes_of(body) if "keyword" in r["signal_ranks"]}

    ranks = listed(search(api, **keyword))
    # Then the keyword signal finds the reply by the turn before it (its context, at half weight),
    # below the turn that holds the words itself
    assert ranks == {question: 1, reply: 2}, ranks
    # When the question is deleted, its words leave the turns around it
    assert api.delete(f"/v1/memories/{memory}/turns/q-1").status == 204
    assert listed(search(api, **keyword)) == {}
    # and the turns left read the turns around them now
    body = search(api, query="nine", memory_ids=[memory], include=["episodes"], signals=["keyword"], min_score=0)
    assert set(listed(body)) == {reply, later}, body
