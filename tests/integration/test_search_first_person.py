"""A question in the first person asks about its asker: an agent searches with what its user asks, so
"what deadline did I set?" is about the user's own turns (role ``user``, subject ``user``, or written
``"User: ..."``) as "what did Caroline paint?" is about Caroline's. The subject boost lifts them above
an assistant's reply that holds more of the question's words; a question that does not speak of its
asker keeps the signals' order."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api_client import ApiClient

SEARCH = "/v1/knowledge/search"

#: The user's turn says the date; the assistant's reply holds the question's words more often.
MINE = "I'm aiming for the first release of the billing service by March 1."
REPLY = ("Release deadline for the billing service: the deadline checklist covers the billing service release, "
         "the deployment of the billing service, and the risks to the release deadline.")
FIRST_PERSON = "What release deadline did I set for the billing service?"
IMPERSONAL = "What is the release deadline for the billing service?"


def ranked(api: ApiClient, memory: str, query: str, **body: Any) -> list[str]:
    response = api.post(SEARCH, {"query": query, "memory_ids": [memory], "min_score": 0, **body})
    assert response.status == 200, response.json
    return [r["id"] for r in response.json["results"]]


def entries(api: ApiClient, items: list[dict[str, Any]]) -> list[str]:
    memory = str(api.post("/v1/memories", {"name": "billing chat"}).json["id"])
    response = api.post("/v1/memory-entries/batch", {"entries": [
        {"memory_id": memory, "source_conversation_id": "chat-1", **item} for item in items]})
    assert response.status in (200, 201), response.json
    return [memory, *(str(r["entry"]["id"]) for r in response.json["results"])]


@pytest.mark.parametrize("written", ["subject", "speaker prefix"])
def test_a_first_person_question_puts_the_users_own_turn_first(api: ApiClient, written: str) -> None:
    # Given a user's turn and the assistant's reply, written with their role as the subject or as a
    # plain client writes a transcript ("User: ...", no subject)
    if written == "subject":
        memory, mine, reply = entries(api, [{"content": MINE, "subject": "user"},
                                            {"content": REPLY, "subject": "assistant"}])
    else:
        memory, mine, reply = entries(api, [{"content": f"User: {MINE}"}, {"content": f"Assistant: {REPLY}"}])
    # When the question does not speak of its asker, the reply, which holds more of its words, is first
    assert ranked(api, memory, IMPERSONAL)[:2] == [reply, mine]
    # Then asked in the first person, the user's own turn is
    assert ranked(api, memory, FIRST_PERSON)[:2] == [mine, reply]
    # and a single signal's preset, which has no subject boost, keeps its order
    assert ranked(api, memory, FIRST_PERSON, preset="keyword_only")[:2] == [reply, mine]


def test_a_first_person_question_puts_the_users_recorded_turn_first(api: ApiClient) -> None:
    # Given the same two turns recorded through the turns endpoint with their roles
    memory = str(api.post("/v1/memories", {"name": "billing turns"}).json["id"])
    response = api.post(f"/v1/memories/{memory}/turns", {"conversation_id": "chat-1", "turns": [
        {"turn_id": "u-1", "role": "user", "content": MINE}, {"turn_id": "a-1", "role": "assistant", "content": REPLY}]})
    assert response.status == 201, response.json
    mine, reply = (turn["id"] for turn in response.json["turns"])
    # Then the reply leads an impersonal question and the user's turn one in the first person
    assert ranked(api, memory, IMPERSONAL, include=["episodes"])[:2] == [reply, mine]
    assert ranked(api, memory, FIRST_PERSON, include=["episodes"])[:2] == [mine, reply]
