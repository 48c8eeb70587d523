"""Expiry (issue 15) on the real database: ``expires_at`` on entries, ``default_ttl`` on memories,
the read-time filter (nothing expired is ever returned, before or after the sweep), the sweep
(invalidated with reason ``expired``, history kept), dedup, isolation, the local timer and the
Lambda handler."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memory_engine.bootstrap import Container
from memory_engine.local.background import background_services
from memory_engine.local.expiry_sweeper import ExpirySweeper
from memory_engine.local.lambda_runtime import invoke
from memory_engine.services.expiry import sweep_expired
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient

PAST = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
FUTURE = (datetime.now(UTC) + timedelta(days=30)).isoformat()


def _visible(api: ApiClient, memory_id: str, query: str) -> set[str]:
    """Entry ids any read path returns: list, search with and without a query, as_of now."""
    seen = {e["id"] for e in api.get("/v1/memory-entries", params={"memory_id": memory_id, "limit": 100}).json["data"]}
    seen |= {e["id"] for e in api.get("/v1/memory-entries", params={"limit": 100}).json["data"]}
    for body in ({"query": query, "memory_ids": [memory_id]}, {"memory_ids": [memory_id]},
                 {"query": query, "memory_ids": [memory_id], "as_of": datetime.now(UTC).isoformat()},
                 {"query": query, "memory_ids": [memory_id], "signals": ["entity"]}):
        response = api.post("/v1/knowledge/search", body)
        assert response.status == 200, response.json
        seen |= {r["id"] for r in response.json["results"]}
    return seen


def _fingerprint(database_url: str, project_id: str) -> Any:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM memory_entries t"
            " WHERE project_id = %s", (project_id,)).fetchone()


def test_an_expired_entry_is_never_returned_before_or_after_the_sweep(
    api: ApiClient, container: Container, make_key: KeyFactory
) -> None:
    # Given a memory with a live fact, one expired an hour ago and one expiring next month
    memory = api.post("/v1/memories", {"name": "expiry"}).json["id"]
    live = api.post("/v1/memory-entries", {"memory_id": memory, "content": "Rita plays the oboe.",
                                           "entities": [{"name": "Rita"}]}).json
    expired = api.post("/v1/memory-entries", {"memory_id": memory, "content": "Rita's door code is 4711.",
                                              "entities": [{"name": "Rita"}], "expires_at": PAST}).json
    later = api.post("/v1/memory-entries", {"memory_id": memory, "content": "Rita is on holiday in Crete.",
                                            "entities": [{"name": "Rita"}], "expires_at": FUTURE}).json
    assert expired["action"] == "created" and expired["expires_at"] is not None
    # and another project's fact that has not expired
    other = ApiClient(make_key("expiry-other", "read,write"))
    theirs = other.post("/v1/memories", {"name": "theirs"}).json["id"]
    other.post("/v1/memory-entries", {"memory_id": theirs, "content": "Keep me.", "expires_at": FUTURE})
    other_project = container.projects.get_or_create_project("expiry-other").id
    before = _fingerprint(container.settings.database_url or "", other_project)

    # Then before any sweep no read returns the expired fact; the audit read shows it as expired
    assert _visible(api, memory, "Rita door code") == {live["id"], later["id"]}
    audit = api.get(f"/v1/memory-entries/{expired['id']}").json
    assert audit["invalidation_reason"] == "expired" and audit["invalidated_at"] is not None
    # and writing the same fact again is not a duplicate of the expired one
    again = api.post("/v1/memory-entries", {"memory_id": memory, "content": "Rita's door code is 4711.",
                                            "entities": [{"name": "Rita"}], "expires_at": PAST})
    assert again.status == 201 and again.json["id"] != expired["id"]

    # When the sweep runs
    swept = sweep_expired(container.expiry)
    # Then both expired entries became history with reason "expired", still hidden from every read
    assert swept >= 2
    with psycopg.connect(container.settings.database_url or "") as conn:
        row = conn.execute("SELECT invalidated_at, invalidation_reason, expires_at FROM memory_entries WHERE id = %s",
                           (expired["id"],)).fetchone()
    assert row is not None and row[1] == "expired" and row[0] == row[2]
    assert _visible(api, memory, "Rita door code") == {live["id"], later["id"]}
    listed = api.get("/v1/memory-entries", params={"memory_id": memory, "include_invalidated": "true"}).json["data"]
    assert expired["id"] in {e["id"] for e in listed}  # kept for audit
    # and a second sweep finds nothing; the other project's rows were not touched
    assert sweep_expired(container.expiry) == 0
    assert _fingerprint(container.settings.database_url or "", other_project) == before


def test_default_ttl_of_a_memory_gives_entries_an_expiry(api: ApiClient) -> None:
    # Given a memory whose entries live one hour by default
    memory = api.post("/v1/memories", {"name": "ttl", "default_ttl": 3600}).json
    assert memory["default_ttl"] == 3600
    # When a fact is written without an expiry, and one with its own
    plain = api.post("/v1/memory-entries", {"memory_id": memory["id"], "content": "The meeting room is 4B."}).json
    own = api.post("/v1/memory-entries", {"memory_id": memory["id"], "content": "The lobby code is 1234.",
                                          "expires_at": FUTURE}).json
    # Then the first expires an hour after it was written; the second keeps its own
    created, expires = datetime.fromisoformat(plain["created_at"]), datetime.fromisoformat(plain["expires_at"])
    assert timedelta(minutes=59) < expires - created < timedelta(minutes=61)
    assert datetime.fromisoformat(own["expires_at"]) == datetime.fromisoformat(FUTURE)
    # and the ttl can be changed and cleared; out of range is 422
    assert api.put(f"/v1/memories/{memory['id']}", {"default_ttl": None}).json["default_ttl"] is None
    assert api.put(f"/v1/memories/{memory['id']}", {"default_ttl": 0}).status == 422
    # and an entry's expiry can be replaced (here: it expires now, so it leaves every read)
    assert api.put(f"/v1/memory-entries/{own['id']}", {"expires_at": PAST}).status == 200
    assert own["id"] not in _visible(api, memory["id"], "lobby code")


def test_the_local_engine_sweeps_on_a_timer(container: Container, api: ApiClient) -> None:
    # Given the engine's background services
    sweepers = [s for s in background_services(container) if isinstance(s, ExpirySweeper)]
    assert len(sweepers) == 1
    memory = api.post("/v1/memories", {"name": "timer"}).json["id"]
    entry = api.post("/v1/memory-entries", {"memory_id": memory, "content": "Temp fact.", "expires_at": PAST}).json
    # When the timer runs (first tick at start)
    sweeper = ExpirySweeper(container, interval=0.05)
    sweeper.start()
    try:
        deadline = datetime.now(UTC) + timedelta(seconds=10)
        while datetime.now(UTC) < deadline:
            with psycopg.connect(container.settings.database_url or "") as conn:
                row = conn.execute("SELECT invalidation_reason FROM memory_entries WHERE id = %s", (entry["id"],)).fetchone()
            if row and row[0] == "expired":
                break
    finally:
        sweeper.stop()
    # Then the entry was invalidated as expired
    assert row is not None and row[0] == "expired"


def test_the_sweep_lambda_invalidates_expired_entries(container: Container, api: ApiClient,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "MemoryEngineTests")
    memory = api.post("/v1/memories", {"name": "lambda"}).json["id"]
    api.post("/v1/memory-entries", {"memory_id": memory, "content": "Lambda-swept fact.", "expires_at": PAST})
    # an EventBridge Scheduler invocation carries no payload the sweep needs
    assert invoke("expiry/handler", {}) == {"expired": 1}
    assert invoke("expiry/handler", {}) == {"expired": 0}
