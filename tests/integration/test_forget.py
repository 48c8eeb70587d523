"""Forgetting on request (issue 15) on the real database: by conversation, by entity of a memory,
purge of a memory; counts, the ``memory.forgotten`` event, idempotency and isolation."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from memory_engine.bootstrap import Container
from memory_engine.local.adapters.event_sinks import RecordingPublisher
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient
from tests.support.extraction import turn_event

TABLES = ("memories", "memory_entries", "entities", "episodes", "extraction_runs")


def _fingerprint(container: Container, project_id: str) -> dict[str, Any]:
    with psycopg.connect(container.settings.database_url or "") as conn:
        return {t: conn.execute(f"SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), ''))"
                                f" FROM {t} x WHERE project_id = %s", (project_id,)).fetchone() for t in TABLES}


def _count(container: Container, sql: str, *params: Any) -> int:
    with psycopg.connect(container.settings.database_url or "") as conn:
        row = conn.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def events(container: Container) -> RecordingPublisher:
    publisher = container.event_publisher
    assert isinstance(publisher, RecordingPublisher)
    publisher.events.clear()
    return publisher


def _seed_conversation(api: ApiClient, container: Container, project: str, memory_id: str, conversation: str) -> None:
    """A turn event (episode + extraction run) and entries written from the conversation, one superseded."""
    project_id = container.projects.get_or_create_project(project).id
    event = turn_event(project_id=project_id, memory_id=memory_id, conversation_id=conversation,
                       messages=[{"role": "user", "content": "Zed told me his locker code is 5521."}])
    assert api.post("/v1/events", event, params={"wait": "true"}).status == 200
    for content in (f"Zed's locker code for {conversation} is 5521.", f"Zed keeps the {conversation} key under the mat."):
        api.post("/v1/memory-entries", {"memory_id": memory_id, "content": content, "subject": "Zed",
                                        "entities": [{"name": "Zed"}, {"name": f"Locker {conversation}"}],
                                        "source_conversation_id": conversation})


def test_forget_a_conversation_deletes_what_came_from_it_once(
    api: ApiClient, container: Container, make_key: KeyFactory, events: RecordingPublisher
) -> None:
    # Given a memory with one conversation to forget, another to keep, and another project's same conversation id
    memory = api.post("/v1/memories", {"name": "forget"}).json["id"]
    _seed_conversation(api, container, "acme", memory, "conv-forget")
    _seed_conversation(api, container, "acme", memory, "conv-keep")
    kept = api.post("/v1/memory-entries", {"memory_id": memory, "content": "Zed likes jazz.",
                                           "entities": [{"name": "Zed"}]}).json
    other = ApiClient(make_key("forget-other", "read,write"))
    theirs = other.post("/v1/memories", {"name": "theirs"}).json["id"]
    _seed_conversation(other, container, "forget-other", theirs, "conv-forget")
    other_project = container.projects.get_or_create_project("forget-other").id
    before = _fingerprint(container, other_project)
    # When the conversation is forgotten
    response = api.post("/v1/forget", {"conversation_id": "conv-forget"})
    # Then its entries, episode, extraction run and the entity only it named are gone, with counts
    assert response.status == 200, response.json
    deleted = response.json["deleted"]
    assert deleted == {"entries": 2, "episodes": 1, "extraction_runs": 1, "entities": 1}, deleted
    acme = container.projects.get_or_create_project("acme").id
    assert _count(container, "SELECT count(*) FROM memory_entries WHERE project_id = %s AND source_conversation_id"
                             " = 'conv-forget'", acme) == 0
    assert _count(container, "SELECT count(*) FROM episodes WHERE project_id = %s AND conversation_id = 'conv-forget'",
                  acme) == 0
    assert _count(container, "SELECT count(*) FROM entities WHERE project_id = %s AND name = 'locker conv-forget'",
                  acme) == 0
    # and everything else stays: the other conversation, the entity others still name, the other project
    assert api.get(f"/v1/memory-entries/{kept['id']}").status == 200
    assert _count(container, "SELECT count(*) FROM memory_entries WHERE project_id = %s AND source_conversation_id"
                             " = 'conv-keep'", acme) == 2
    assert _count(container, "SELECT count(*) FROM entities WHERE project_id = %s AND name = 'zed'", acme) == 1
    assert _fingerprint(container, other_project) == before
    # and memory.forgotten was published with the counts
    forgotten = [e for e in events.events if e["detail-type"] == "memory.forgotten"]
    assert len(forgotten) == 1 and forgotten[0]["detail"]["deleted"] == deleted
    assert forgotten[0]["detail"]["project_id"] == acme
    # When it is sent again: nothing more is deleted and no event is published
    again = api.post("/v1/forget", {"conversation_id": "conv-forget"})
    assert again.status == 200 and set(again.json["deleted"].values()) == {0}
    assert len([e for e in events.events if e["detail-type"] == "memory.forgotten"]) == 1


def test_forget_an_entity_of_a_memory(api: ApiClient, container: Container, events: RecordingPublisher) -> None:
    # Given two memories that both know Quinn, and an episode naming Quinn
    memory = api.post("/v1/memories", {"name": "entity"}).json["id"]
    elsewhere = api.post("/v1/memories", {"name": "entity-2"}).json["id"]
    acme = container.projects.get_or_create_project("acme").id
    event = turn_event(project_id=acme, memory_id=memory, conversation_id="conv-quinn",
                       messages=[{"role": "user", "content": "Quinn's birthday is in March."}])
    assert api.post("/v1/events", event, params={"wait": "true"}).status == 200
    for content in ("Quinn was born in March.", "Quinn works night shifts."):
        api.post("/v1/memory-entries", {"memory_id": memory, "content": content, "entities": [{"name": "Quinn"}]})
    unrelated = api.post("/v1/memory-entries", {"memory_id": memory, "content": "Rosa paints.",
                                                "entities": [{"name": "Rosa"}]}).json
    api.post("/v1/memory-entries", {"memory_id": elsewhere, "content": "Quinn plays darts.", "entities": [{"name": "Quinn"}]})
    # When Quinn is forgotten in the first memory (any spelling of the name)
    response = api.post("/v1/forget", {"memory_id": memory, "entity": "  QUINN "})
    # Then its facts there and the episode naming Quinn go; the entity stays (the other memory links it)
    assert response.status == 200, response.json
    assert response.json["deleted"] == {"entries": 2, "episodes": 1, "extraction_runs": 1, "entities": 0}
    assert api.get(f"/v1/memory-entries/{unrelated['id']}").status == 200
    assert len(api.get("/v1/memory-entries", params={"memory_id": elsewhere}).json["data"]) == 1
    # and forgetting it in the other memory removes the entity too; a repeat is a no-op
    assert api.post("/v1/forget", {"memory_id": elsewhere, "entity": "Quinn"}).json["deleted"]["entities"] == 1
    assert set(api.post("/v1/forget", {"memory_id": elsewhere, "entity": "Quinn"}).json["deleted"].values()) == {0}


def test_forget_validation_and_foreign_memory(api: ApiClient, make_key: KeyFactory) -> None:
    assert api.post("/v1/forget", {}).status == 422
    assert api.post("/v1/forget", {"entity": "x"}).status == 422
    assert api.post("/v1/forget", {"conversation_id": "c", "entity": "x", "memory_id": "mem_x"}).status == 422
    other = ApiClient(make_key("forget-other", "read,write"))
    theirs = other.post("/v1/memories", {"name": "foreign"}).json["id"]
    assert api.post("/v1/forget", {"memory_id": theirs, "entity": "Zed"}).status == 404
    assert api.post("/v1/forget", {"conversation_id": "c", "memory_id": theirs}).status == 404


def test_purge_a_memory(api: ApiClient, container: Container, events: RecordingPublisher) -> None:
    # Given a memory with entries, an episode, an extraction run and an entity only it names
    # ("Locker conv-purge"; "Zed" is also named by another memory of the project, whichever tests ran before)
    memory = api.post("/v1/memories", {"name": "purge"}).json["id"]
    _seed_conversation(api, container, "acme", memory, "conv-purge")
    neighbour = api.post("/v1/memories", {"name": "purge neighbour"}).json["id"]
    assert api.post("/v1/memory-entries", {"memory_id": neighbour, "content": "Zed waters the plants.",
                                           "entities": [{"name": "Zed"}]}).status == 201
    # When it is deleted with purge=true
    response = api.delete(f"/v1/memories/{memory}", params={"purge": "true"})
    # Then 200 with the counts, nothing of it is left, and memory.forgotten was published
    assert response.status == 200, response.json
    assert response.json["deleted"] == {"entries": 2, "episodes": 1, "extraction_runs": 1, "entities": 1}
    assert _count(container, "SELECT count(*) FROM extraction_runs WHERE conversation_id = 'conv-purge'") == 0
    assert api.get("/v1/memory-entries", params={"memory_id": neighbour}).json["data"][0]["entities"][0]["name"] == "Zed"
    assert [e["detail"]["memory_id"] for e in events.events if e["detail-type"] == "memory.forgotten"] == [memory]
    # and a repeat is 404 (the memory is gone)
    assert api.delete(f"/v1/memories/{memory}", params={"purge": "true"}).status == 404
