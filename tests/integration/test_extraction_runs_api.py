"""GET /v1/extraction-runs: the runs the extraction consumer recorded, newest first, filtered, paginated,
and only ever the key's own project's."""

from __future__ import annotations

from datetime import timedelta

from memory_engine.bootstrap import Container
from memory_engine.ports.extraction_runs import RunKey
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient


def _run(container: Container, project_id: str, memory_id: str, event_id: str, *, error: str | None = None) -> str:
    claim = container.extraction_runs.claim(
        RunKey(project_id, event_id, memory_id, "conv-1", f"turn-{event_id}"), stale_after=timedelta(minutes=5))
    summary = {"candidates": 2, "created": 1, "updated": 0, "skipped": 0, "superseded": 1}
    container.extraction_runs.finish(project_id, claim.run.id, status="failed" if error else "completed",
                                     summary=summary, error=error)
    return str(claim.run.id)


def test_lists_runs_newest_first_with_filters_and_pages(container: Container, make_key: KeyFactory) -> None:
    # Given two runs in project "runs-a" (one failed) and one in project "runs-b"
    api_a = ApiClient(make_key("runs-a", "read,write"))
    api_b = ApiClient(make_key("runs-b", "read,write"))
    mem_a = api_a.post("/v1/memories", {"name": "a"}).json
    mem_b = api_b.post("/v1/memories", {"name": "b"}).json
    ok = _run(container, mem_a["project_id"], mem_a["id"], "evt-ok")
    bad = _run(container, mem_a["project_id"], mem_a["id"], "evt-bad", error="model timed out")
    foreign = _run(container, mem_b["project_id"], mem_b["id"], "evt-foreign")

    # When project A lists its runs
    listed = api_a.get("/v1/extraction-runs")
    # Then it sees its own two, newest first, with the summary counts and the error; never B's
    assert listed.status == 200, listed.json
    assert [r["id"] for r in listed.json["data"]] == [bad, ok]
    assert foreign not in listed.body.decode()
    first = listed.json["data"][0]
    assert first["status"] == "failed" and first["error"] == "model timed out"
    assert first["summary"]["superseded"] == 1 and first["event_id"] == "evt-bad"
    assert "project_id" not in first

    # And the filters narrow, the cursor pages
    assert [r["id"] for r in api_a.get("/v1/extraction-runs", params={"status": "completed"}).json["data"]] == [ok]
    assert [r["id"] for r in api_a.get("/v1/extraction-runs", params={"event_id": "evt-ok"}).json["data"]] == [ok]
    assert api_a.get("/v1/extraction-runs", params={"memory_id": mem_b["id"]}).json["data"] == []
    page1 = api_a.get("/v1/extraction-runs", params={"limit": 1}).json
    page2 = api_a.get("/v1/extraction-runs", params={"limit": 1, "cursor": page1["next_cursor"]}).json
    assert [r["id"] for r in page1["data"] + page2["data"]] == [bad, ok] and page2["next_cursor"] is None


def test_bad_filters_are_422_and_a_missing_key_is_401(make_key: KeyFactory) -> None:
    api = ApiClient(make_key("runs-a", "read"))
    assert api.get("/v1/extraction-runs", params={"status": "done"}).status == 422
    assert api.get("/v1/extraction-runs", params={"limit": 0}).status == 422
    assert api.get("/v1/extraction-runs", params={"cursor": "nope"}).status == 422
    assert ApiClient(None).get("/v1/extraction-runs").status == 401
