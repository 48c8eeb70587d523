"""The ingestion rules API (``/v1/ingestion-rules``) through the real API handler, and how rules
apply: the most specific glob wins, request fields override the rule, the effective settings are
recorded on the document, and another project's rules never apply."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from memory_engine.bootstrap import Container
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient
from tests.support.converter import ConverterService, allowing_converters, converter_service
from tests.support.ingestion import upload_and_ingest


@pytest.fixture(scope="module")
def converter(container: Container) -> Iterator[ConverterService]:
    """The converter on 127.0.0.1, allowed by CONVERTER_ALLOWED_HOSTS (host and port)."""
    with converter_service() as service, allowing_converters(container, service.host_port):
        yield service


@pytest.fixture(scope="module")
def rules_admin(make_key: KeyFactory) -> ApiClient:
    return ApiClient(make_key("rules", "admin"))


@pytest.fixture(scope="module")
def rules_reader(make_key: KeyFactory) -> ApiClient:
    return ApiClient(make_key("rules", "read,write"))


@pytest.fixture(autouse=True)
def _no_rules(rules_admin: ApiClient) -> Iterator[None]:
    yield
    for rule in rules_admin.get("/v1/ingestion-rules").json["data"]:
        rules_admin.delete(f"/v1/ingestion-rules/{rule['id']}")


def _rule(glob: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"content_type_glob": glob, "converter": {"type": "http", "url": url}, **extra}


def test_an_admin_creates_reads_replaces_and_deletes_a_rule(rules_admin: ApiClient, rules_reader: ApiClient) -> None:
    # Given an admin key, When it creates a rule
    created = rules_admin.post("/v1/ingestion-rules", _rule(
        "Application/PDF", "https://ocr.example.com/convert", native_extraction="first",
        chunk_strategy="size", chunk_size=500))
    # Then it is stored (glob lowercased) with the defaults filled in
    assert created.status == 201, created.json
    rule = created.json
    assert rule["id"].startswith("rule_") and rule["content_type_glob"] == "application/pdf"
    assert rule["converter"] == {"type": "http", "url": "https://ocr.example.com/convert", "headers": {},
                                 "timeout_s": 60.0}
    assert rule["native_extraction"] == "first" and rule["file_delivery"] == "base64"
    assert (rule["chunk_strategy"], rule["chunk_size"], rule["chunk_overlap"]) == ("size", 500, None)
    # And a read key lists and reads it, but cannot change it
    assert [r["id"] for r in rules_reader.get("/v1/ingestion-rules").json["data"]] == [rule["id"]]
    assert rules_reader.get(f"/v1/ingestion-rules/{rule['id']}").json == rule
    assert rules_reader.post("/v1/ingestion-rules", _rule("image/*", "https://x.example")).status == 403
    assert rules_reader.delete(f"/v1/ingestion-rules/{rule['id']}").status == 403
    # When the admin replaces it with an OCR rule
    replaced = rules_admin.put(f"/v1/ingestion-rules/{rule['id']}", {
        "content_type_glob": "application/pdf", "converter": {"type": "ocr"}, "native_extraction": "skip",
        "file_delivery": "download_url"})
    assert replaced.status == 200, replaced.json
    assert replaced.json["converter"] == {"type": "ocr"} and replaced.json["native_extraction"] == "skip"
    assert replaced.json["chunk_strategy"] is None and replaced.json["id"] == rule["id"]
    # And deletes it: gone
    assert rules_admin.delete(f"/v1/ingestion-rules/{rule['id']}").status == 204
    assert rules_admin.get(f"/v1/ingestion-rules/{rule['id']}").status == 404
    assert rules_admin.delete(f"/v1/ingestion-rules/{rule['id']}").status == 404


@pytest.mark.parametrize(("body", "field"), [
    (_rule("pdf", "https://x.example"), "content_type_glob"),
    (_rule("application/[pdf", "https://x.example"), "content_type_glob"),
    (_rule("text/plain; charset=utf-8", "https://x.example"), "content_type_glob"),
    (_rule("image/*", "ftp://x.example/convert"), "converter.http.url"),
    (_rule("image/*", "not a url"), "converter.http.url"),
    (_rule("image/*", "https://user:pw@x.example/"), "converter.http.url"),
    ({"content_type_glob": "image/*", "converter": {"type": "lambda", "arn": "x"}}, "converter"),
    ({"content_type_glob": "image/*", "converter": {"type": "http"}}, "converter.http.url"),
    (_rule("image/*", "https://x.example", chunk_size=10), "chunk_size"),
    (_rule("image/*", "https://x.example", chunk_size=500, chunk_overlap=500), "body"),
    (_rule("image/*", "https://x.example", native_extraction="sometimes"), "native_extraction"),
    (_rule("image/*", "https://x.example", file_delivery="email"), "file_delivery"),
    ({"content_type_glob": "image/*", "converter": {"type": "http", "url": "https://x.example", "timeout_s": 3600}},
     "converter.http.timeout_s"),
    ({"content_type_glob": "image/*", "converter": {"type": "http", "url": "https://x.example",
                                                    "headers": {"Bad Header": "x"}}}, "converter.http.headers"),
    ({"content_type_glob": "image/*", "converter": {"type": "http", "url": "https://x.example",
                                                    "headers": {"X-Key": "a\r\nInjected: 1"}}}, "converter.http.headers"),
])
def test_a_bad_rule_is_a_422_naming_the_field(rules_admin: ApiClient, body: dict[str, Any], field: str) -> None:
    # When an admin sends a rule with a bad glob, URL, converter type, size or option
    r = rules_admin.post("/v1/ingestion-rules", body)
    # Then it is rejected with a 422 naming the field, and nothing is stored
    assert r.status == 422, r.json
    fields = [d["field"] for d in r.json["error"]["details"]]
    assert any(f.endswith(field) or field in f for f in fields), fields
    assert rules_admin.get("/v1/ingestion-rules").json["data"] == []


def test_one_rule_per_glob_and_another_projects_rule_is_not_found(rules_admin: ApiClient, make_key: KeyFactory) -> None:
    rule = rules_admin.post("/v1/ingestion-rules", _rule("image/png", "https://x.example")).json
    # Then a second rule for the same glob is a conflict
    assert rules_admin.post("/v1/ingestion-rules", _rule("IMAGE/PNG", "https://y.example")).status == 409
    # And another project's admin neither sees nor changes it
    other = ApiClient(make_key("rules-other", "admin"))
    assert other.get("/v1/ingestion-rules").json["data"] == []
    assert other.get(f"/v1/ingestion-rules/{rule['id']}").status == 404
    assert other.put(f"/v1/ingestion-rules/{rule['id']}", _rule("image/png", "https://z.example")).status == 404
    assert other.delete(f"/v1/ingestion-rules/{rule['id']}").status == 404


def test_chunk_settings_precedence_request_then_rule_then_default(rules_admin: ApiClient, rules_reader: ApiClient) -> None:
    # Given rules for text/* (size 300) and the more specific text/markdown (recursive, size 600)
    broad = rules_admin.post("/v1/ingestion-rules", _rule("text/*", "https://x.example", chunk_strategy="size",
                                                          chunk_size=300, chunk_overlap=30)).json
    narrow = rules_admin.post("/v1/ingestion-rules", _rule("text/markdown", "https://x.example",
                                                           chunk_strategy="recursive", chunk_size=600)).json
    text = "\n\n".join(f"Paragraph {i} about the harbour cranes of the old port, number {i}." for i in range(40))
    # When text documents are created without chunk fields
    md = rules_reader.post("/v1/documents", {"path": "/notes/cranes.md", "content": text, "wait": True}).json
    txt = rules_reader.post("/v1/documents", {"path": "/notes/cranes.txt", "content": text, "wait": True}).json
    # Then the most specific matching rule decides, and the document records it
    assert (md["chunk_strategy"], md["chunk_size"], md["chunk_settings_source"]) == ("recursive", 600, "rule")
    assert md["ingestion_rule_id"] == narrow["id"] and md["status"] == "ready"
    assert (txt["chunk_strategy"], txt["chunk_size"], txt["chunk_overlap"]) == ("size", 300, 30)
    assert txt["ingestion_rule_id"] == broad["id"] and txt["chunk_settings_source"] == "rule"
    assert txt["total_chunks"] > 1
    # When a request sends its own chunk fields, Then they win over the rule
    own = rules_reader.post("/v1/documents", {"path": "/notes/own.md", "content": text, "chunk_size": 900,
                                              "wait": True}).json
    assert (own["chunk_strategy"], own["chunk_size"], own["chunk_settings_source"]) == ("recursive", 900, "request")
    # And without any rule the entry point's default applies
    rules_admin.delete(f"/v1/ingestion-rules/{narrow['id']}")
    rules_admin.delete(f"/v1/ingestion-rules/{broad['id']}")
    plain = rules_reader.post("/v1/documents", {"path": "/notes/plain.md", "content": text, "wait": True}).json
    assert (plain["chunk_strategy"], plain["chunk_settings_source"], plain["ingestion_rule_id"]) == \
        ("whole", "default", None)


def test_a_documents_batch_applies_the_rules_to_each_item(rules_admin: ApiClient, rules_reader: ApiClient) -> None:
    # Given rules for text/* (size 300) and text/markdown (recursive, 600)
    broad = rules_admin.post("/v1/ingestion-rules", _rule("text/*", "https://x.example", chunk_strategy="size",
                                                          chunk_size=300)).json
    narrow = rules_admin.post("/v1/ingestion-rules", _rule("text/markdown", "https://x.example",
                                                           chunk_strategy="recursive", chunk_size=600)).json
    # When one batch creates a markdown text, a plain text and a text with its own chunk fields
    r = rules_reader.post("/v1/documents/batch", {"documents": [
        {"path": "/batch-rules/a.md", "content": "Harbour cranes lift containers."},
        {"path": "/batch-rules/b.txt", "content": "Tugboats push barges upriver."},
        {"path": "/batch-rules/c.md", "content": "Pilots board ships at the bar.", "chunk_size": 900},
    ]})
    # Then each item gets the most specific rule for its own type, and its own fields win
    assert r.status == 200, r.json
    md, txt, own = (item["document"] for item in r.json["results"])
    assert (md["chunk_strategy"], md["chunk_size"], md["ingestion_rule_id"]) == ("recursive", 600, narrow["id"])
    assert (txt["chunk_strategy"], txt["chunk_size"], txt["ingestion_rule_id"]) == ("size", 300, broad["id"])
    assert (own["chunk_size"], own["chunk_settings_source"]) == (900, "request")
    # And all three are ingested under those settings
    for doc in (md, txt, own):
        deadline = time.monotonic() + 60
        while (status := rules_reader.get(f"/v1/documents/{doc['id']}").json["status"]) == "processing" \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status == "ready"

def test_an_upload_with_chunk_fields_keeps_them_over_the_rule(container: Container, rules_admin: ApiClient,
                                                             rules_reader: ApiClient) -> None:
    # Given a rule for text/plain with size chunks, and an upload URL requested with recursive chunks
    rules_admin.post("/v1/ingestion-rules", _rule("text/plain", "https://x.example", chunk_strategy="size",
                                                  chunk_size=200))
    rules_reader.post("/v1/documents/uploads", {"path": "/up/asked.txt", "chunk_strategy": "recursive"})
    project_id = container.projects.get_or_create_project("rules").id
    # When the file arrives (and another one without requested settings)
    data = ("A sentence about tides and moons. " * 60).encode()
    assert upload_and_ingest(container, project_id, "/up/asked.txt", data).status == "succeeded"
    assert upload_and_ingest(container, project_id, "/up/plain.txt", data).status == "succeeded"
    # Then the requested settings win; the other file takes the rule's
    asked = container.documents.find_by_path(project_id, "/up/asked.txt")
    plain = container.documents.find_by_path(project_id, "/up/plain.txt")
    assert asked is not None and plain is not None
    assert (asked.chunk_strategy.value, asked.chunk_settings_source) == ("recursive", "request")
    assert (plain.chunk_strategy.value, plain.chunk_size, plain.chunk_settings_source) == ("size", 200, "rule")


def test_the_most_specific_glob_picks_the_converter(container: Container, rules_admin: ApiClient,
                                                    converter: ConverterService) -> None:
    # Given a broad rule (application/*) to a failing converter and a specific one to a working one
    rules_admin.post("/v1/ingestion-rules", _rule("application/*", converter.url("/fail")))
    specific = rules_admin.post("/v1/ingestion-rules", _rule("application/x-fjord", converter.url("/sync"))).json
    project_id = container.projects.get_or_create_project("rules").id
    # When a file of the specific type arrives
    result = upload_and_ingest(container, project_id, "/data/survey.fjord", b"depth soundings of the fjord",
                               content_type="application/x-fjord")
    # Then the specific rule's converter read it
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, "/data/survey.fjord")
    assert doc is not None and doc.status.value == "ready" and doc.ingestion_rule_id == specific["id"]
    assert converter.last()["path"] == "/sync"
    # And a file only the broad rule matches goes to the broad rule's converter (and fails with its message)
    other = upload_and_ingest(container, project_id, "/data/other.bin", b"zzz", content_type="application/x-other")
    assert other.status == "failed" and "HTTP 500" in (other.error or "") and "out of licences" not in (other.error or "")


def test_another_projects_rules_never_apply(container: Container, make_key: KeyFactory,
                                            converter: ConverterService) -> None:
    # Given project "rules-other" has a rule for application/x-fjord, and project "rules-plain" has none
    ApiClient(make_key("rules-other", "admin")).post("/v1/ingestion-rules",
                                                    _rule("application/x-fjord", converter.url("/sync")))
    before = len(converter.requests)
    plain = container.projects.get_or_create_project("rules-plain").id
    # When rules-plain ingests such a file
    result = upload_and_ingest(container, plain, "/x.fjord", b"soundings", content_type="application/x-fjord")
    # Then no converter is called and the document fails saying to add a rule
    assert result.status == "failed" and "add an ingestion rule" in (result.error or "")
    assert len(converter.requests) == before
