"""Tenant isolation as a property: a key of one project, aimed at another project's ids and filters,
on every endpoint, reveals nothing, changes nothing and counts nothing.

Two projects hold data of every kind (memories, entries with entities, a ready document with chunks,
episodes and extraction runs from ``turn.completed`` events, an upload URL). Hypothesis picks the
attacker, the endpoint and which of the victim's ids/filters to use. Each request must answer 404
(never 403: a foreign id does not exist) or, for lists and search, 200 with none of the victim's
data; afterwards both projects' rows (every table, every column) are exactly what they were.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_engine.bootstrap import Container
from tests.support.api_client import ApiClient, ApiResponse
from tests.support.extraction import turn_event

#: Every table that holds a project's data, fingerprinted row by row (api_keys excluded: a key's
#: last use is bookkeeping, not data).
TABLES = ("memories", "memory_entries", "entities", "documents", "document_chunks", "episodes", "extraction_runs",
          "ingestion_rules")


@dataclass
class Tenant:
    name: str
    project_id: str
    api: ApiClient
    secret: str  # a word that appears only in this tenant's data
    memory_id: str
    entry_id: str
    document_id: str
    path_prefix: str
    tag: str
    entity: str
    upload_token: str
    event_ids: list[str]
    rule_id: str

    @property
    def ids(self) -> list[str]:
        return [self.memory_id, self.entry_id, self.document_id, self.upload_token, *self.event_ids, self.rule_id]


def _populate(container: Container, make_key: Any, name: str, secret: str) -> Tenant:
    api = ApiClient(make_key(name, "read,write"))
    project_id = container.projects.get_or_create_project(name).id
    tag, entity, prefix = f"{secret.lower()}-tag", f"{secret} Holdings", f"/{secret.lower()}/"
    memory = api.post("/v1/memories", {"name": f"{secret} memory", "tags": [tag], "metadata": {"owner": secret}}).json
    entry = api.post("/v1/memory-entries", {
        "memory_id": memory["id"], "content": f"{entity} acquired the {secret} launch codes.", "tags": [tag],
        "subject": entity, "predicate": "acquired", "object": f"{secret} launch codes",
        "entities": [{"name": entity, "type": "organization"}],
    }).json
    assert entry["action"] == "created", entry
    doc = api.post("/v1/documents", {"path": f"{prefix}plan.md", "content": f"# {secret} plan\n\nThe {secret} vault opens.",
                                     "tags": [tag], "wait": True}).json
    assert doc["status"] == "ready", doc
    upload = api.post("/v1/documents/uploads", {"path": f"{prefix}upload.md"}).json
    event = turn_event(project_id=project_id, memory_id=memory["id"], conversation_id=f"conv-{secret.lower()}",
                       messages=[{"role": "user", "content": f"Remember the {secret} password."}])
    delivered = api.post("/v1/events", event, params={"wait": "true"})
    assert delivered.status == 200, delivered.json
    rule = ApiClient(make_key(name, "admin")).post("/v1/ingestion-rules", {
        "content_type_glob": f"application/x-{secret.lower()}",
        "converter": {"type": "http", "url": f"https://{secret.lower()}.example/convert"}})
    assert rule.status == 201, rule.json
    return Tenant(name, project_id, api, secret, memory["id"], entry["id"], doc["id"], prefix, tag, entity,
                  upload["upload_url"].rsplit("/", 1)[-1], [event["id"]], rule.json["id"])


@pytest.fixture(scope="module")
def tenants(container: Container, make_key: Any) -> tuple[Tenant, Tenant]:
    return _populate(container, make_key, "tenant-a", "Aardvark"), _populate(container, make_key, "tenant-b", "Zebra")


def _fingerprint(database_url: str, project_id: str) -> dict[str, tuple[int, str]]:
    """Per table: (rows, md5 of every row's full text) of one project."""
    out = {}
    with psycopg.connect(database_url) as conn:
        for table in TABLES:
            out[table] = conn.execute(
                f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "
                f"FROM {table} t WHERE project_id = %s", (project_id,),
            ).fetchone()
    return out


# --- what a hostile request can be: (method, path, body or None, query params or None) ---


def _requests(victim: Tenant, attacker: Tenant) -> st.SearchStrategy[tuple[str, str, Any, dict[str, str] | None]]:
    v = victim
    foreign_event = turn_event(project_id=v.project_id, memory_id=v.memory_id)
    own_project_foreign_memory = turn_event(project_id=attacker.project_id, memory_id=v.memory_id)
    search_filters = st.fixed_dictionaries({}, optional={
        "query": st.sampled_from([v.secret, v.entity, f"{v.secret} launch codes", f"{v.secret} vault"]),
        "memory_ids": st.just([v.memory_id]),
        "memory_tags": st.sampled_from([[v.tag], ["*"], [f"{v.secret.lower()}*"]]),
        "document_ids": st.just([v.document_id]),
        "document_paths": st.sampled_from([[v.path_prefix], ["/"]]),
        "include": st.sampled_from([["episodes"], ["raw"], ["raw", "episodes"]]),
        "render": st.booleans(),
        "signals": st.sampled_from([["vector"], ["keyword"], ["entity"], ["vector", "keyword", "entity"]]),
    })
    return st.one_of(
        st.sampled_from([
            ("GET", f"/v1/memories/{v.memory_id}", None, None),
            ("PUT", f"/v1/memories/{v.memory_id}", {"name": "pwned", "tags": []}, None),
            ("DELETE", f"/v1/memories/{v.memory_id}", None, None),
            ("GET", "/v1/memory-entries", None, {"memory_id": v.memory_id}),
            ("GET", "/v1/memory-entries", None, {"memory_id": v.memory_id, "include_invalidated": "true"}),
            ("POST", "/v1/memory-entries", {"memory_id": v.memory_id, "content": f"{v.entity} is pwned."}, None),
            ("GET", f"/v1/memory-entries/{v.entry_id}", None, None),
            ("PUT", f"/v1/memory-entries/{v.entry_id}", {"content": "pwned", "tags": []}, None),
            ("DELETE", f"/v1/memory-entries/{v.entry_id}", None, None),
            ("GET", f"/v1/documents/{v.document_id}", None, None),
            ("GET", f"/v1/documents/{v.document_id}/status", None, None),
            ("POST", f"/v1/documents/{v.document_id}/ingest", {"chunk_strategy": "size", "chunk_size": 100}, None),
            ("DELETE", f"/v1/documents/{v.document_id}", None, None),
            ("GET", f"/v1/ingestion-rules/{v.rule_id}", None, None),
            ("GET", "/v1/ingestion-rules", None, None),
            # an upload URL is a bearer capability, like a presigned S3 URL: holding the victim's genuine
            # URL is holding its credential (tests/unit/domain/test_upload_tokens.py). What a key of another
            # project must never do is forge one: the victim's token with its signature altered.
            ("PUT", f"/v1/local-uploads/{_tampered(v.upload_token)}", None, None),
            ("POST", "/v1/events", foreign_event, {"wait": "true"}),
            ("POST", "/v1/events", own_project_foreign_memory, {"wait": "true"}),
        ]),
        st.sampled_from([v.tag, "*", f"{v.secret.lower()}*"]).map(lambda t: ("GET", "/v1/memories", None, {"tags": t})),
        st.fixed_dictionaries({}, optional={
            "path_prefix": st.sampled_from([v.path_prefix, "/"]), "tags": st.sampled_from([v.tag, "*"]),
            "status": st.sampled_from(["ready", "pending"]),
        }).map(lambda q: ("GET", "/v1/documents", None, q)),
        st.just(("GET", "/v1/memory-entries", None, None)),
        search_filters.map(lambda body: ("POST", "/v1/knowledge/search", body, None)),
    )


def _lifecycle_requests(victim: Tenant) -> st.SearchStrategy[tuple[str, str, Any, dict[str, str] | None]]:
    """The memory lifecycle's routes (issue 15) and the turns API (issue 36), aimed at the victim: batch
    writes and deletes, export, forget and purge, turns recorded, listed and deleted. (A strategy of its
    own: adding them to ``_requests`` would change which requests that test's derandomized draws pick.)"""
    v = victim
    return st.sampled_from([
            ("POST", "/v1/memory-entries/batch", {"entries": [
                {"memory_id": v.memory_id, "content": f"{v.entity} is pwned."},
                {"memory_id": v.memory_id, "content": f"{v.entity} acquired the {v.secret} launch codes."}]}, None),
            ("DELETE", "/v1/memory-entries/batch", {"ids": [v.entry_id]}, None),
            ("GET", f"/v1/memories/{v.memory_id}/export", None, None),
            ("GET", f"/v1/memories/{v.memory_id}/export", None, {"vectors": "false"}),
            ("DELETE", f"/v1/memories/{v.memory_id}", None, {"purge": "true"}),
            ("POST", "/v1/forget", {"conversation_id": f"conv-{v.secret.lower()}"}, None),
            ("POST", "/v1/forget", {"conversation_id": f"conv-{v.secret.lower()}",
                                    "memory_id": v.memory_id}, None),
            ("POST", "/v1/forget", {"memory_id": v.memory_id, "entity": v.entity}, None),
            # the turns API (issue 36): the victim's memory and conversation
            ("POST", f"/v1/memories/{v.memory_id}/turns", {"conversation_id": f"conv-{v.secret.lower()}",
                                                           "turns": [{"role": "user", "content": "pwned"}]}, None),
            ("POST", f"/v1/memories/{v.memory_id}/turns", {"conversation_id": f"conv-{v.secret.lower()}", "extract": True,
                                                           "turns": [{"turn_id": "turn-1", "role": "user",
                                                                      "content": "pwned"}]}, None),
            ("GET", f"/v1/memories/{v.memory_id}/turns", None, {"conversation_id": f"conv-{v.secret.lower()}"}),
            ("GET", f"/v1/memories/{v.memory_id}/turns", None, {"conversation_id": f"conv-{v.secret.lower()}",
                                                                 "order": "desc"}),
            ("DELETE", f"/v1/memories/{v.memory_id}/turns/turn-1", None, None),
            ("DELETE", f"/v1/memories/{v.memory_id}/turns/turn-1", None, {"conversation_id": f"conv-{v.secret.lower()}"}),
            ("DELETE", f"/v1/memories/{v.memory_id}/turns", None, {"conversation_id": f"conv-{v.secret.lower()}"}),
    ])


def _assert_reveals_nothing(response: ApiResponse, victim: Tenant, request: tuple[Any, ...]) -> None:
    text = response.body.decode()
    sent = json.dumps(request)
    assert response.status in (200, 404), (request, response.status, text)
    if response.status == 404:
        assert response.json["error"]["code"] == "not_found", text
    assert victim.secret.lower() not in text.lower() or (victim.secret.lower() in sent.lower() and response.status == 404), (
        request, text)
    for foreign_id in victim.ids:
        assert foreign_id not in text or foreign_id in sent, (request, foreign_id, text)
    if response.status == 200 and isinstance(response.json, dict):
        assert response.json.get("data", []) == [] or all(row["project_id"] != victim.project_id
                                                        for row in response.json["data"]), text


def test_no_request_with_one_projects_key_reveals_changes_or_counts_anothers_data(
    tenants: tuple[Tenant, Tenant], database_url: str
) -> None:
    a, b = tenants
    before = {t.project_id: _fingerprint(database_url, t.project_id) for t in tenants}
    views = {t.project_id: (t.api.get("/v1/memories").json, t.api.get("/v1/documents").json) for t in tenants}

    @given(data=st.data())
    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def hostile(data: Any) -> None:
        # Given an attacker, a victim and a request aimed at the victim's ids or filters
        attacker, victim = data.draw(st.sampled_from([(a, b), (b, a)]), label="attacker, victim")
        method, path, body, params = request = data.draw(_requests(victim, attacker), label="request")
        # When the attacker's key sends it
        response = attacker.api.request(method, path, json_body=body, params=params)
        # Then it answers 404 or the attacker's own data only, and no project's rows changed
        _assert_reveals_nothing(response, victim, request)
        for tenant in tenants:
            assert _fingerprint(database_url, tenant.project_id) == before[tenant.project_id], (request, tenant.name)

    hostile()
    # and each project still sees exactly its own data
    for tenant in tenants:
        assert (tenant.api.get("/v1/memories").json, tenant.api.get("/v1/documents").json) == views[tenant.project_id]
        found = tenant.api.post("/v1/knowledge/search", {"query": tenant.secret, "memory_ids": [tenant.memory_id]}).json
        assert {r["id"] for r in found["results"]} >= {tenant.entry_id}


def test_same_fact_in_two_projects_is_two_entries(tenants: tuple[Tenant, Tenant]) -> None:
    a, b = tenants
    mine = a.api.post("/v1/memories", {"name": "a-own"}).json
    written = a.api.post("/v1/memory-entries", {"memory_id": mine["id"], "content": f"{b.entity} acquired the "
                                                                                     f"{b.secret} launch codes."})
    assert written.status == 201 and written.json["id"] != b.entry_id


def test_no_lifecycle_request_reveals_or_changes_anothers_data(tenants: tuple[Tenant, Tenant], database_url: str) -> None:
    a, b = tenants
    before = {t.project_id: _fingerprint(database_url, t.project_id) for t in tenants}

    @given(data=st.data())
    @settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    def hostile(data: Any) -> None:
        # Given an attacker and a lifecycle request aimed at the victim's ids, entity or conversation
        attacker, victim = data.draw(st.sampled_from([(a, b), (b, a)]), label="attacker, victim")
        method, path, body, params = request = data.draw(_lifecycle_requests(victim), label="request")
        # When the attacker's key sends it
        response = attacker.api.request(method, path, json_body=body, params=params)
        # Then 404 or a 200 about the attacker's own project only (rejected items, zero counts), nothing changed
        _assert_reveals_nothing(response, victim, request)
        if response.status == 200 and "results" in response.json:
            assert {r["action"] for r in response.json["results"]} <= {"rejected", "not_found"}, response.json
        if response.status == 200 and "deleted" in response.json and isinstance(response.json["deleted"], dict):
            assert set(response.json["deleted"].values()) == {0}, response.json
        for tenant in tenants:
            assert _fingerprint(database_url, tenant.project_id) == before[tenant.project_id], (request, tenant.name)

    hostile()


def _tampered(token: str) -> str:
    """The token with its last character changed (the signature no longer matches)."""
    return token[:-1] + ("A" if token[-1] != "A" else "B")
