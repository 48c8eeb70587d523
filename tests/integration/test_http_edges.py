"""Issue 34 at the HTTP edge, through the real handlers (API Gateway v2 events, no sockets):
content types (defect 6), the one JSON depth rule at every entry point (defect 9), cursors (defect
10), and answers that agree with the OpenAPI document and with GET (defect 11)."""

from __future__ import annotations

import base64
import json
import re
import threading
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_engine.domain.converter_protocol import parse_answer_bytes
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.domain.validation import MAX_BODY_DEPTH, JsonTooDeep, loads_json
from memory_engine.errors import InvalidInput
from memory_engine.http.health import committed_openapi_document
from memory_engine.local.container import LocalContainer
from memory_engine.local.pipeline import PipelineResult
from memory_engine.services.memory_import import import_memory
from tests.support.api_client import ApiClient
from tests.support.converter import converter_service
from tests.support.ingestion import fast_runner, object_created_event

#: The hostile depths of the issue: a flat run of brackets, and valid JSON 900 levels deep.
BRACKETS = "[" * 100_000
NESTED_900 = "[" * 900 + "]" * 900
HEADER = '{"type":"header","format":"memory-engine.memory","version":1}'
MEMORY = '{"type":"memory","id":"mem_exported","name":"deep"}'


def _json_routes() -> list[tuple[str, str]]:
    """Every operation of the document that reads a JSON body: (method, path with ids filled in)."""
    found = []
    for path, item in committed_openapi_document()["paths"].items():
        for method, operation in item.items():
            if "application/json" in operation.get("requestBody", {}).get("content", {}):
                found.append((method.upper(), re.sub(r"\{[^}]+\}", "x_1", path)))
    return found


@pytest.fixture(scope="module")
def admin(make_key: Any) -> ApiClient:
    return ApiClient(make_key("edges", "read,write,admin"))


# --- defect 6: a JSON body labelled text/plain or application/xml -------------------------------
@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "text/plain; charset=utf-8"])
def test_a_json_body_labelled_otherwise_is_415_on_every_json_route(admin: ApiClient, content_type: str) -> None:
    # Given every route that reads a JSON body (search, memories, batch, documents batch, forget, MCP, ...)
    routes = _json_routes()
    assert {("POST", "/v1/mcp"), ("POST", "/v1/memory-entries/batch"), ("POST", "/v1/forget"),
            ("POST", "/v1/knowledge/search")} <= set(routes)
    answers = {}
    # When each gets a valid JSON body labelled as something else
    for method, path in routes:
        r = admin.request(method, path, body=b'{"name": "x", "query": "q"}', headers={"content-type": content_type})
        answers[f"{method} {path}"] = (r.status, (r.json or {}).get("error", {}).get("code"))
    # Then each answers 415 with the SPEC's error body, never a 5xx
    assert {k: v for k, v in answers.items() if v != (415, "unsupported_media_type")} == {}


def test_a_json_body_without_a_content_type_is_still_read_as_json(admin: ApiClient) -> None:
    r = admin.request("POST", "/v1/memories", body=b'{"name": "unlabelled"}', headers={"content-type": ""})
    assert r.status == 201, r.json


# --- defect 9: one depth rule for every JSON the engine parses ------------------------------------
@pytest.mark.parametrize("text", [BRACKETS, NESTED_900], ids=["100k-brackets", "900-levels"])
def test_the_one_depth_rule_refuses_before_parsing(text: str) -> None:
    with pytest.raises(JsonTooDeep):
        loads_json(text)
    with pytest.raises(JsonTooDeep):
        loads_json(text.encode())
    assert loads_json("[" * MAX_BODY_DEPTH + "]" * MAX_BODY_DEPTH) is not None  # the limit itself is fine


@pytest.mark.parametrize("text", [BRACKETS, NESTED_900], ids=["100k-brackets", "900-levels"])
def test_a_deep_body_is_422_also_base64_encoded(admin: ApiClient, text: str) -> None:
    # a type API Gateway does not know as text arrives base64-encoded (the import's JSONL does)
    for content_type in ("application/json", "application/x-ndjson", "application/octet-stream"):
        r = admin.request("POST", "/v1/memories/import", body=f"{HEADER}\n{MEMORY}\n{text}\n".encode(),
                          headers={"content-type": content_type})
        assert r.status == 422, (content_type, r.status, r.json)
        assert r.json["error"]["details"][0]["field"] in ("body", "type")
    r = admin.request("POST", "/v1/memories", body=text.encode(), headers={"content-type": "application/json"})
    assert r.status == 422 and r.json["error"]["details"] == [{"field": "body", "limit": MAX_BODY_DEPTH}]
    assert all(m["name"] != "deep" for m in admin.get("/v1/memories").json["data"])


@pytest.mark.parametrize("text", [BRACKETS, NESTED_900], ids=["100k-brackets", "900-levels"])
def test_a_deep_import_line_is_422_naming_it_and_leaves_nothing(container: LocalContainer, text: str) -> None:
    project = container.projects.get_or_create_project("edges-import").id
    before = container.memories.list(project, limit=100)[0]
    with pytest.raises(InvalidInput) as caught:
        import_memory([HEADER, MEMORY, text], project_id=project, episodes=container.episodes, importer=container.importer,
                      embedder=container.embedder)
    assert "line 3" in caught.value.message and f"deeper than {MAX_BODY_DEPTH}" in caught.value.message
    assert container.memories.list(project, limit=100)[0] == before


def test_episode_messages_nested_900_levels_are_refused(container: LocalContainer) -> None:
    project = container.projects.get_or_create_project("edges-import").id
    messages: Any = "leaf"
    for _ in range(900):
        messages = [messages]
    line = json.dumps({"type": "episode", "id": "ep_1", "transcript": "t", "messages": [messages],
                       "created_at": "2024-01-01T00:00:00Z"})
    with pytest.raises(InvalidInput):
        import_memory([HEADER, MEMORY, line], project_id=project, episodes=container.episodes, importer=container.importer,
                      embedder=container.embedder)
    # and a line within the body rule whose `messages` nest past the rule of stored JSON (as metadata)
    shallow: Any = "leaf"
    for _ in range(MAX_BODY_DEPTH - 2):
        shallow = [shallow]
    line = json.dumps({"type": "episode", "id": "ep_1", "transcript": "t", "messages": [shallow],
                       "created_at": "2024-01-01T00:00:00Z"})
    with pytest.raises(InvalidInput) as caught:
        import_memory([HEADER, MEMORY, line], project_id=project, episodes=container.episodes, importer=container.importer,
                      embedder=container.embedder)
    assert "messages" in json.dumps(caught.value.details)


@pytest.mark.parametrize("text", [BRACKETS, NESTED_900], ids=["100k-brackets", "900-levels"])
def test_a_deep_converter_answer_fails_with_a_clear_reason(text: str) -> None:
    # the one parse site of converter answers: synchronous answers and callback bodies
    with pytest.raises(ConverterFailed, match=f"deeper than {MAX_BODY_DEPTH} levels"):
        parse_answer_bytes(text.encode(), source="the converter at http://c.test")


@pytest.mark.parametrize("text", [BRACKETS, NESTED_900], ids=["100k-brackets", "900-levels"])
def test_a_deep_event_is_422(admin: ApiClient, text: str) -> None:
    r = admin.request("POST", "/v1/events", body=text.encode())
    assert r.status == 422, r.json


# --- defect 10: cursors are input ---------------------------------------------------------------
def _cursor(created: str, row_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([created, row_id]).encode()).decode().rstrip("=")


FORGED = {
    "lone surrogate id": _cursor("2024-01-01T00:00:00+00:00", "\ud800"),
    "NUL in the id": _cursor("2024-01-01T00:00:00+00:00", "a\u0000b"),
    "deep": base64.urlsafe_b64encode(BRACKETS.encode()).decode(),
    "not base64 JSON": "!!!",
    "year 10000 in UTC": _cursor("9999-12-31T23:59:59-12:00", "x"),
}


@pytest.mark.parametrize("forged", FORGED.values(), ids=FORGED.keys())
def test_a_forged_cursor_is_422_on_every_list(admin: ApiClient, forged: str) -> None:
    memory = admin.post("/v1/memories", {"name": "cursor"}).json["id"]
    lists = [("/v1/memories", {}), ("/v1/memory-entries", {"memory_id": memory}), ("/v1/documents", {}),
             ("/v1/extraction-runs", {}), ("/v1/ingestion-rules", {})]
    answers = {path: admin.get(path, params={**params, "cursor": forged}) for path, params in lists}
    assert {p: r.status for p, r in answers.items()} == {p: 422 for p, _ in lists}
    assert all(r.json["error"]["details"] == [{"field": "cursor"}] for r in answers.values())


# --- defect 11: answers agree with the document and with GET ---------------------------------------
@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("TRACE", "/v1/memories", "GET, POST"),
    ("PATCH", "/v1/memories/mem_x", "GET, PUT, DELETE"),
    ("TRACE", "/v1/knowledge/search", "POST"),
    ("DELETE", "/v1/health", "GET"),
    ("OPTIONS", "/v1/local-downloads/tok", "GET"),
])
def test_an_unsupported_method_is_405_with_allow(admin: ApiClient, method: str, path: str, allowed: str) -> None:
    r = admin.request(method, path)
    assert r.status == 405, (r.status, r.json)
    assert r.headers.get("Allow") == allowed and r.json["error"]["code"] == "method_not_allowed"
    assert admin.request(method, "/v1/no-such-thing").status == 404


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/documents", {"path": "/b.txt", "content": "x", "chunk_strategy": "size", "chunk_overlap": True},
     "chunk_overlap"),
    ("/v1/documents", {"path": "/b.txt", "content": "x", "chunk_strategy": "size", "chunk_size": 100.0}, "chunk_size"),
    ("/v1/documents/uploads", {"path": "/b.pdf", "chunk_overlap": False}, "chunk_overlap"),
    ("/v1/ingestion-rules", {"content_type_glob": "x/y", "converter": {"type": "http", "url": "http://c.test"},
                             "chunk_overlap": True}, "chunk_overlap"),
    ("/v1/memories", {"name": "ttl", "default_ttl": True}, "default_ttl"),
    ("/v1/knowledge/search", {"query": "q", "limit": True}, "limit"),
    ("/v1/memory-entries", {"memory_id": "mem_x", "content": "c", "confidence": True}, "confidence"),
])
def test_a_boolean_is_not_a_number(admin: ApiClient, path: str, body: dict[str, Any], field: str) -> None:
    # each value is in range once read as a number (true is 1, 100.0 is 100): only strictness refuses it
    r = admin.post(path, body)
    assert r.status == 422, (r.status, r.json)
    assert [d.get("field", "").rsplit(".", 1)[-1] for d in r.json["error"]["details"]] == [field], r.json


def test_a_write_with_a_past_expiry_answers_what_get_shows(admin: ApiClient) -> None:
    memory = admin.post("/v1/memories", {"name": "expired"}).json["id"]
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    written = admin.post("/v1/memory-entries", {"memory_id": memory, "content": "gone already", "expires_at": past,
                                                 "entities": [{"name": "Ann"}]}).json
    plain = admin.post("/v1/memory-entries", {"memory_id": memory, "content": "no entities, gone", "expires_at": past}).json
    batch = admin.post("/v1/memory-entries/batch", {"entries": [
        {"memory_id": memory, "content": "batched and gone", "expires_at": past}]}).json["results"][0]["entry"]
    for entry in (written, plain, batch):
        read = admin.get(f"/v1/memory-entries/{entry['id']}").json
        assert entry["invalidated_at"] is not None and entry["invalidation_reason"] == "expired"
        assert (entry["invalidated_at"], entry["invalidation_reason"]) == (read["invalidated_at"], read["invalidation_reason"])


def _allowing(container: LocalContainer, converter: Any) -> AbstractContextManager[Any]:
    """The converter stub listens on 127.0.0.1: where the engine has an outbound guard (issue 34
    defect 1, ``allowing_converters``), it allows exactly that stub; without one, nothing to do."""
    try:
        from tests.support.converter import allowing_converters  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return nullcontext()
    return allowing_converters(container, converter.host_port)  # type: ignore[no-any-return,unused-ignore]


def test_a_deep_callback_body_fails_the_document_with_the_reason(container: LocalContainer, admin: ApiClient) -> None:
    # Given a document waiting for a deferred converter's pages
    project = container.projects.get_or_create_project("edges").id
    with converter_service() as converter, _allowing(container, converter):
        rule = admin.post("/v1/ingestion-rules", {"content_type_glob": "image/x-deep",
                                                  "converter": {"type": "http", "url": converter.url("/pending")}})
        assert rule.status == 201, rule.json
        try:
            key = f"projects/{project}/scans/deep.img"
            container.blob_store.put(key, b"\x89 deep scan", content_type="image/x-deep")
            outcome: list[PipelineResult] = []
            runner = fast_runner(container)
            thread = threading.Thread(target=lambda: outcome.append(
                runner.run(object_created_event(container.blob_store.bucket, key, 11))))
            thread.start()
            body = converter.wait_for_request(1)["body"]
            callback = "/" + body["callback_url"].split("://", 1)[1].split("/", 1)[1]
            # When the converter posts pages nested 100,000 levels deep to its callback URL
            r = ApiClient(None).request("POST", callback, body=BRACKETS.encode(),
                                        headers={"content-type": "application/json"})
            thread.join(30)
        finally:
            admin.delete(f"/v1/ingestion-rules/{rule.json['id']}")
    # Then the answer is a 4xx saying why, and the document ends failed with that reason (not processing)
    assert r.status == 422 and f"deeper than {MAX_BODY_DEPTH} levels" in r.json["error"]["message"], r.json
    assert outcome and outcome[0].status == "failed", outcome
    doc = container.documents.find_by_path(project, "/scans/deep.img")
    assert doc is not None and doc.status.value == "failed" and f"deeper than {MAX_BODY_DEPTH}" in (doc.error or "")
