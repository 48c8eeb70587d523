"""A key of project A can neither read, list, update nor delete anything of project B (404, never 403)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api_client import ApiClient


@pytest.fixture(scope="module")
def tenants(make_key: Any) -> tuple[ApiClient, ApiClient, dict[str, Any]]:
    a = ApiClient(make_key("tenant-a", "read,write"))
    b = ApiClient(make_key("tenant-b", "read,write"))
    memory = b.post("/v1/memories", {"name": "b-secrets", "tags": ["secret"]}).json
    entry = b.post("/v1/memory-entries", {"memory_id": memory["id"], "content": "Project B's launch code is 1234."}).json
    return a, b, {"memory": memory, "entry": entry}


def _assert_hidden(response: Any) -> None:
    assert response.status == 404, (response.status, response.json)
    assert response.json["error"]["code"] == "not_found"


def test_a_cannot_read_or_list_b(tenants: tuple[ApiClient, ApiClient, dict[str, Any]]) -> None:
    a, b, owned = tenants
    memory_id, entry_id = owned["memory"]["id"], owned["entry"]["id"]
    _assert_hidden(a.get(f"/v1/memories/{memory_id}"))
    _assert_hidden(a.get(f"/v1/memory-entries/{entry_id}"))
    _assert_hidden(a.get("/v1/memory-entries", params={"memory_id": memory_id}))
    assert memory_id not in {m["id"] for m in a.get("/v1/memories", params={"tags": "*"}).json["data"]}
    assert entry_id not in {e["id"] for e in a.get("/v1/memory-entries").json["data"]}
    # and B still sees its own
    assert b.get(f"/v1/memories/{memory_id}").status == 200
    assert [e["id"] for e in b.get("/v1/memory-entries").json["data"]] == [entry_id]


def test_a_cannot_write_update_or_delete_b(tenants: tuple[ApiClient, ApiClient, dict[str, Any]]) -> None:
    a, b, owned = tenants
    memory_id, entry_id = owned["memory"]["id"], owned["entry"]["id"]
    _assert_hidden(a.post("/v1/memory-entries", {"memory_id": memory_id, "content": "Project B's launch code is 1234."}))
    _assert_hidden(a.put(f"/v1/memories/{memory_id}", {"name": "pwned"}))
    _assert_hidden(a.put(f"/v1/memory-entries/{entry_id}", {"content": "pwned"}))
    _assert_hidden(a.delete(f"/v1/memory-entries/{entry_id}"))
    _assert_hidden(a.delete(f"/v1/memories/{memory_id}"))
    # B's data is untouched
    assert b.get(f"/v1/memories/{memory_id}").json["name"] == "b-secrets"
    entry = b.get(f"/v1/memory-entries/{entry_id}").json
    assert entry["content"] == "Project B's launch code is 1234."
    assert len(b.get("/v1/memory-entries", params={"memory_id": memory_id}).json["data"]) == 1


def test_same_fact_in_two_projects_is_two_entries(tenants: tuple[ApiClient, ApiClient, dict[str, Any]]) -> None:
    a, _, owned = tenants
    mine = a.post("/v1/memories", {"name": "a-own"}).json
    written = a.post("/v1/memory-entries", {"memory_id": mine["id"], "content": "Project B's launch code is 1234."})
    assert written.status == 201 and written.json["id"] != owned["entry"]["id"]
