"""Memories and memory entries over HTTP (real Lambda handler, real database, real embedder)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.support.api_client import ApiClient


def _memory(api: ApiClient, name: str = "prefs", **fields: Any) -> dict[str, Any]:
    response = api.post("/v1/memories", {"name": name, **fields})
    assert response.status == 201, response.json
    return response.json  # type: ignore[no-any-return]


def _write(api: ApiClient, memory_id: str, content: str, **fields: Any) -> Any:
    return api.post("/v1/memory-entries", {"memory_id": memory_id, "content": content, **fields})


def test_memory_crud_round_trip(api: ApiClient) -> None:
    # Given a memory created with tags and metadata
    created = _memory(api, "crud", description="d", tags=["crm", "crm", "customer"], metadata={"a": 1})
    assert created["id"].startswith("mem_") and created["tags"] == ["crm", "customer"]
    assert datetime.fromisoformat(created["created_at"]).tzinfo is not None  # ISO 8601 with a zone
    # When it is read, updated partially, then cleared
    assert api.get(f"/v1/memories/{created['id']}").json == created
    renamed = api.put(f"/v1/memories/{created['id']}", {"name": "renamed"}).json
    assert renamed["name"] == "renamed" and renamed["tags"] == ["crm", "customer"] and renamed["metadata"] == {"a": 1}
    cleared = api.put(f"/v1/memories/{created['id']}", {"tags": None, "metadata": None, "description": None}).json
    # Then only the fields sent changed
    assert cleared["tags"] == [] and cleared["metadata"] is None and cleared["description"] is None
    assert cleared["name"] == "renamed" and cleared["updated_at"] > created["updated_at"]
    assert api.put(f"/v1/memories/{created['id']}", {"name": None}).status == 422
    # And delete removes it
    assert api.delete(f"/v1/memories/{created['id']}").status == 204
    assert api.get(f"/v1/memories/{created['id']}").status == 404
    assert api.delete(f"/v1/memories/{created['id']}").status == 404


def test_list_memories_filters_tags_with_ored_globs_and_paginates(make_key: Any) -> None:
    api = ApiClient(make_key("globs", "read,write"))
    for name, tags in [("a", ["customer"]), ("b", ["customer-support"]), ("c", ["user-prefs"]), ("d", ["crm"]),
                       ("e", ["user-xrefs", "x"]), ("f", ["other"]), ("g", ["50%_off"])]:
        _memory(api, name, tags=tags)

    def names(**params: Any) -> list[str]:
        response = api.get("/v1/memories", params=params)
        assert response.status == 200, response.json
        return sorted(m["name"] for m in response.json["data"])

    assert names(tags="crm") == ["d"]
    assert names(tags="customer*") == ["a", "b"]
    assert names(tags="user-?refs") == ["c", "e"]
    assert names(tags=["crm", "user-p*"]) == ["c", "d"]          # repeated parameter -> ORed
    assert names(tags="crm,customer") == ["a", "d"]              # comma-separated -> ORed
    assert names(tags="50%_off") == ["g"] and names(tags="5_%") == []  # LIKE metacharacters are literal
    assert len(names()) == 7
    # pagination: newest first, no overlap, cursor ends with null
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        body = api.get("/v1/memories", params=params).json
        seen += [m["name"] for m in body["data"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == ["g", "f", "e", "d", "c", "b", "a"]
    assert api.get("/v1/memories", params={"cursor": "garbage!"}).status == 422
    assert api.get("/v1/memories", params={"limit": 0}).status == 422


def test_entry_write_skip_list_get_put_delete(api: ApiClient) -> None:
    memory = _memory(api, "entries")
    # Given a fact written twice over the manual path
    first = _write(api, memory["id"], "  Alice prefers window seats on flights.  ", tags=["travel"], metadata={"k": 1})
    assert first.status == 201 and first.json["action"] == "created"
    entry = first.json
    assert entry["id"].startswith("ment_") and entry["content"] == "Alice prefers window seats on flights."
    assert entry["source_type"] == "manual" and entry["confidence"] == 1.0 and entry["invalidated_at"] is None
    again = _write(api, memory["id"], "Alice prefers window seats on flights.", tags=["other"])
    # Then the second is skipped and the existing entry returned unchanged
    assert again.status == 200 and again.json["action"] == "skipped" and again.json["id"] == entry["id"]
    assert again.json["tags"] == ["travel"]
    # A lower similarity but a high threshold -> created
    other = _write(api, memory["id"], "Bob prefers aisle seats.", duplicate_threshold=1.0)
    assert other.status == 201
    # Listing: newest first
    listed = api.get("/v1/memory-entries", params={"memory_id": memory["id"]}).json
    assert [e["id"] for e in listed["data"]] == [other.json["id"], entry["id"]] and listed["next_cursor"] is None
    # PUT replaces outright; null / [] clear
    put = api.put(f"/v1/memory-entries/{entry['id']}", {"content": "Alice prefers aisle seats now.", "tags": []})
    assert put.status == 200, put.json
    assert put.json["content"] == "Alice prefers aisle seats now." and put.json["tags"] == [] and put.json["metadata"] == {"k": 1}
    cleared = api.put(f"/v1/memory-entries/{entry['id']}", {"metadata": None, "tags": ["a", "b"]}).json
    assert cleared["metadata"] is None and cleared["tags"] == ["a", "b"]
    assert api.put(f"/v1/memory-entries/{entry['id']}", {"content": "   "}).status == 422
    assert api.put(f"/v1/memory-entries/{entry['id']}", {"source_event_id": "x"}).status == 422
    # DELETE
    assert api.delete(f"/v1/memory-entries/{entry['id']}").status == 204
    assert api.get(f"/v1/memory-entries/{entry['id']}").status == 404


def test_entry_list_paginates_with_a_cursor(api: ApiClient) -> None:
    memory = _memory(api, "paged")
    written = [_write(api, memory["id"], f"Fact number {i} concerns the colour {c}.", duplicate_threshold=1.0).json["id"]
               for i, c in enumerate(["red", "blue", "green", "amber", "violet"])]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"memory_id": memory["id"], "limit": 2, **({"cursor": cursor} if cursor else {})}
        body = api.get("/v1/memory-entries", params=params).json
        seen += [e["id"] for e in body["data"]]
        cursor = body["next_cursor"]
        if not cursor:
            break
    assert seen == list(reversed(written))


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"content": ""}, 422),
        ({"content": " \n\t "}, 422),
        ({"content": "x" * 8001}, 413),
        ({"content": "ok fact", "tags": [f"t{i}" for i in range(51)]}, 422),
        ({"content": "ok fact", "tags": ["x" * 129]}, 422),
        ({"content": "ok fact", "tags": [" "]}, 422),
        ({"content": "ok fact", "duplicate_threshold": 1.5}, 422),
        ({"content": "ok fact", "duplicate_threshold": -0.1}, 422),
        ({"content": "ok fact", "confidence": 2}, 422),
        ({"content": "ok fact", "source_type": "robot"}, 422),
        ({"content": "ok fact", "metadata": [1, 2]}, 422),
        ({"content": "ok fact", "metadata": {"blob": "x" * 20_000}}, 413),
        ({"content": "ok fact", "unknown_field": 1}, 422),
    ],
)
def test_bad_writes_get_clear_4xx(api: ApiClient, body: dict[str, Any], status: int) -> None:
    memory = _memory(api, "limits")
    response = api.post("/v1/memory-entries", {"memory_id": memory["id"], **body})
    assert response.status == status, response.json
    assert response.json["error"]["message"]


def test_unknown_memory_is_404_and_content_is_exactly_at_the_limit_ok(api: ApiClient) -> None:
    assert _write(api, "mem_01NOPE0000000000000000000", "a fact").status == 404
    memory = _memory(api, "edge")
    assert _write(api, memory["id"], "y" * 8000).status == 201
    assert api.get("/v1/memory-entries", params={"memory_id": "mem_nope"}).status == 404


def test_deleting_a_memory_deletes_its_entries(api: ApiClient) -> None:
    memory = _memory(api, "doomed")
    entry = _write(api, memory["id"], "The doomed memory holds this fact.").json
    assert api.delete(f"/v1/memories/{memory['id']}").status == 204
    assert api.get(f"/v1/memory-entries/{entry['id']}").status == 404


def test_read_key_cannot_write(make_key: Any) -> None:
    reader = ApiClient(make_key("acme", "read"))
    assert reader.post("/v1/memories", {"name": "x"}).status == 403
    assert reader.get("/v1/memories").status == 200


def test_structured_fields_round_trip_and_are_validated(api: ApiClient) -> None:
    memory = _memory(api, "structured")
    body = {"subject": "Dana", "predicate": "moved to", "object": "Lisbon", "confidence": 0.8,
            "valid_from": "2024-03-01T00:00:00", "valid_to": "2025-01-01T00:00:00Z", "source_quote": "I moved",
            "entities": [{"name": "Dana", "type": "person"}, {"name": "Lisbon", "type": "place"}],
            "source_conversation_id": "conv-1", "source_generation_id": "turn-1", "source_event_id": "evt-1"}
    created = _write(api, memory["id"], "Dana moved to Lisbon in March 2024.", **body)
    assert created.status == 201, created.json
    entry = created.json
    assert entry["confidence"] == 0.8
    assert entry["valid_from"].startswith("2024-03-01T00:00:00") and entry["valid_from"][-1] in "Z0"
    assert [(e["name"], e["role"]) for e in entry["entities"]] == [("Dana", "subject"), ("Lisbon", "object")]
    provenance = (entry["source_conversation_id"], entry["source_generation_id"], entry["source_event_id"])
    assert provenance == ("conv-1", "turn-1", "evt-1")
    bad_window = _write(api, memory["id"], "Another fact about windows.", valid_from="2025-01-01T00:00:00Z",
                        valid_to="2024-01-01T00:00:00Z")
    assert bad_window.status == 422
    # PUT replaces entities outright
    put = api.put(f"/v1/memory-entries/{entry['id']}", {"entities": [{"name": "Porto"}]}).json
    assert [(e["name"], e["role"]) for e in put["entities"]] == [("Porto", "mention")]
    assert api.put(f"/v1/memory-entries/{entry['id']}", {"confidence": None}).status == 422
    assert api.put(f"/v1/memory-entries/{entry['id']}", {"content": "z" * 8001}).status == 413


def test_an_entry_lists_its_entities_in_the_same_order_when_read_and_when_found(api: ApiClient) -> None:
    # Given an entry with a subject, an object and two mentions (names chosen so that role order and
    # name order disagree)
    memory = _memory(api, "entity-order")
    created = _write(api, memory["id"], "Zoe lent Bruno the Aalto vase at Kyoto.", subject="Zoe", predicate="lent",
                     object="Bruno", entities=[{"name": "Zoe", "type": "person"}, {"name": "Bruno", "type": "person"},
                                               {"name": "Kyoto", "type": "place"}, {"name": "Aalto vase"}])
    assert created.status == 201, created.json
    expected = [("Zoe", "subject"), ("Bruno", "object"), ("Aalto vase", "mention"), ("Kyoto", "mention")]
    # Then the write, the read, the list and a search answer the same order
    read = api.get(f"/v1/memory-entries/{created.json['id']}").json
    listed = api.get("/v1/memory-entries", params={"memory_id": memory["id"]}).json["data"][0]
    found = api.post("/v1/knowledge/search", {"query": "who lent the vase", "memory_ids": [memory["id"]]}).json
    for entry in (created.json, read, listed, found["results"][0]):
        assert [(e["name"], e["role"]) for e in entry["entities"]] == expected
