"""The converter protocol end to end: a real converter service on 127.0.0.1, the local runner
calling the ingestion handlers, the real database and model. Synchronous answers, deferred answers
through the signed callback, and every way a converter can fail ends ``failed`` with the reason."""

from __future__ import annotations

import base64
import dataclasses
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_engine import constants as c
from memory_engine.domain.converter_protocol import CALLBACK_ROUTE_PREFIX, sign_callback_token
from memory_engine.local.adapters.event_sinks import RecordingPublisher
from memory_engine.local.container import LocalContainer
from memory_engine.local.pipeline import PipelineResult
from tests.support.api_client import ApiClient
from tests.support.converter import ConverterService, allowing_converters, converter_service, pages_of
from tests.support.ingestion import fast_runner, upload_and_ingest
from tests.support.rules import admin_fixture, clean_rules_fixture, reader_fixture  # noqa: F401 - fixtures

PROJECT = "convert"


@pytest.fixture(scope="module")
def converter(container: LocalContainer) -> Iterator[ConverterService]:
    """The converter on 127.0.0.1, allowed by CONVERTER_ALLOWED_HOSTS (host and port)."""
    with converter_service() as service, allowing_converters(container, service.host_port):
        yield service


@pytest.fixture(scope="module")
def project_id(container: LocalContainer, admin: ApiClient) -> str:
    return container.projects.get_or_create_project(PROJECT).id


def _rule(admin: ApiClient, glob: str, url: str, **extra: Any) -> dict[str, Any]:
    converter = {"type": "http", "url": url, **extra.pop("converter", {})}
    r = admin.post("/v1/ingestion-rules", {"content_type_glob": glob, "converter": converter, **extra})
    assert r.status == 201, r.json
    return dict(r.json)


def _events(container: LocalContainer, detail_type: str, document_id: str) -> list[dict[str, Any]]:
    publisher = container.event_publisher
    assert isinstance(publisher, RecordingPublisher)
    return [e["detail"] for e in publisher.events
            if e["detail-type"] == detail_type and e["detail"]["document_id"] == document_id]


def _search(reader: ApiClient, query: str, path: str) -> list[dict[str, Any]]:
    r = reader.post("/v1/knowledge/search", {"query": query, "document_paths": [path]})
    assert r.status == 200, r.json
    return list(r.json["results"])


def test_a_synchronous_converter_makes_an_unreadable_type_searchable(
        container: LocalContainer, admin: ApiClient, reader: ApiClient, converter: ConverterService,
        project_id: str) -> None:
    # Given a rule routing audio/* to a converter that answers pages at once, with an auth header
    rule = _rule(admin, "audio/*", converter.url("/sync"), converter={"headers": {"X-Api-Key": "s3cret"}})
    # When a "recording" (its transcript, two pages) is ingested
    data = b"the lighthouse keeper logs the storm\fthe ferry leaves at dawn"
    result = upload_and_ingest(container, project_id, "/audio/log.ogg", data, content_type="audio/ogg")
    # Then the converter got the protocol's request
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, "/audio/log.ogg")
    assert doc is not None and doc.status.value == "ready" and doc.total_pages == 2
    request = converter.last()
    assert request["headers"].get("X-Api-Key") == "s3cret"
    body = request["body"]
    assert set(body) == {"document_id", "path", "content_type", "file", "file_delivery", "callback_url"}
    assert (body["document_id"], body["path"], body["content_type"]) == (doc.id, "/audio/log.ogg", "audio/ogg")
    assert base64.b64decode(body["file"]) == data and body["file_delivery"] == "base64"
    assert CALLBACK_ROUTE_PREFIX in body["callback_url"]
    # And the document is searchable by what the converter returned, page by page
    hits = _search(reader, "lighthouse keeper storm", "/audio/")
    assert hits and hits[0]["document_id"] == doc.id and hits[0]["page"] == 1
    assert doc.ingestion_rule_id == rule["id"]
    # And document.ready was published with the project, document and path
    assert _events(container, c.DETAIL_TYPE_DOCUMENT_READY, doc.id)[-1] == {
        "project_id": project_id, "document_id": doc.id, "path": "/audio/log.ogg", "error": None}


def test_native_first_reads_a_pdf_with_text_and_converts_only_when_it_cannot(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str) -> None:
    # Given a rule for text/plain with native_extraction first
    _rule(admin, "text/plain", converter.url("/fail"))
    before = len(converter.requests)
    # When a readable text file is ingested, Then the native extractor reads it and the converter is not called
    result = upload_and_ingest(container, project_id, "/notes/native.txt", b"plain words the engine reads itself",
                               content_type="text/plain")
    assert result.status == "succeeded", result.error
    assert len(converter.requests) == before


def test_skip_sends_even_a_readable_file_to_the_converter(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str) -> None:
    _rule(admin, "text/markdown", converter.url("/sync"), native_extraction="skip")
    result = upload_and_ingest(container, project_id, "/notes/skip.md", b"# heading\nbody", content_type="text/markdown")
    assert result.status == "succeeded", result.error
    assert converter.last()["body"]["path"] == "/notes/skip.md"


def test_download_url_delivery_hands_a_signed_expiring_link(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str) -> None:
    # Given a rule that delivers the file as a download URL
    _rule(admin, "application/x-big", converter.url("/pending"), file_delivery="download_url")
    data = b"\x00\x01 large binary survey " * 100
    runner = fast_runner(container)
    outcome: list[PipelineResult] = []
    key = f"projects/{project_id}/big/survey.bin"
    container.blob_store.put(key, data, content_type="application/x-big")
    from tests.support.ingestion import object_created_event

    thread = threading.Thread(target=lambda: outcome.append(runner.run(object_created_event(
        container.blob_store.bucket, key, len(data)))))
    count = len(converter.requests) + 1
    thread.start()
    body = converter.wait_for_request(count)["body"]
    # Then `file` is a signed URL on the engine that serves exactly the stored bytes, without an API key
    assert body["file_delivery"] == "download_url" and "/v1/local-downloads/" in body["file"]
    path = body["file"].split("://", 1)[1].split("/", 1)[1]
    got = ApiClient(None).get("/" + path)
    assert got.status == 200 and got.body == data
    assert ApiClient(None).get("/" + path[:-3] + "AAA").status == 403
    # When the converter delivers through the callback, Then the run finishes
    callback = "/" + body["callback_url"].split("://", 1)[1].split("/", 1)[1]
    r = ApiClient(None).post(callback, {"pages": [{"page": 1, "text": "survey depth data"}]})
    thread.join(30)
    assert r.status == 200, (r.json, outcome)
    thread.join(30)
    assert outcome and outcome[0].status == "succeeded", outcome


def test_a_download_url_serves_a_binary_file_byte_for_byte(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str) -> None:
    # Given a rule delivering images as a download URL, and an "image" holding every byte value
    _rule(admin, "image/png", converter.url("/pending"), file_delivery="download_url")
    data = bytes(range(256)) * 64
    key = f"projects/{project_id}/scans/page 1;\"x\".png"
    container.blob_store.put(key, data, content_type="image/png")
    from tests.support.ingestion import object_created_event

    runner = fast_runner(container)
    thread = threading.Thread(target=lambda: runner.run(object_created_event(container.blob_store.bucket, key, len(data))))
    count = len(converter.requests) + 1
    thread.start()
    body = converter.wait_for_request(count)["body"]
    # When the converter GETs the URL it received
    path = "/" + body["file"].split("://", 1)[1].split("/", 1)[1]
    got = ApiClient(None).get(path)
    # Then it gets the exact bytes with their content type, never sniffed or rendered
    assert got.status == 200, got.body[:200]
    assert got.body == data and got.headers["Content-Type"] == "image/png"
    assert got.headers["X-Content-Type-Options"] == "nosniff"
    assert got.headers["Content-Disposition"] == (
        "attachment; filename=\"page_1__x_.png\"; filename*=UTF-8''page%201%3B%22x%22.png")
    callback = "/" + body["callback_url"].split("://", 1)[1].split("/", 1)[1]
    assert ApiClient(None).post(callback, {"pages": [{"page": 1, "text": "scanned words"}]}).status == 200
    thread.join(30)


def test_a_deferred_converter_delivers_through_the_signed_callback_once(
        container: LocalContainer, admin: ApiClient, reader: ApiClient, converter: ConverterService,
        project_id: str) -> None:
    # Given a rule to a converter that answers {"status": "pending"}
    _rule(admin, "image/tiff", converter.url("/pending"))
    data = b"II*\x00 scanned harbour chart"
    key = f"projects/{project_id}/scans/chart.tiff"
    container.blob_store.put(key, data, content_type="image/tiff")
    from tests.support.ingestion import object_created_event

    outcome: list[PipelineResult] = []
    runner = fast_runner(container)
    count = len(converter.requests) + 1
    thread = threading.Thread(target=lambda: outcome.append(
        runner.run(object_created_event(container.blob_store.bucket, key, len(data)))))
    thread.start()
    # When the converter got the file, the run waits (the document stays processing)
    body = converter.wait_for_request(count)["body"]
    doc = container.documents.find_by_path(project_id, "/scans/chart.tiff")
    assert doc is not None and doc.status.value == "processing"
    callback = "/" + body["callback_url"].split("://", 1)[1].split("/", 1)[1]
    token = callback.removeprefix(CALLBACK_ROUTE_PREFIX)
    anonymous = ApiClient(None)
    # Then a forged, tampered or expired callback URL is refused (403) and changes nothing
    assert anonymous.post(CALLBACK_ROUTE_PREFIX + token[:-2] + "xx", {"pages": ["forged"]}).status == 403
    assert anonymous.post(CALLBACK_ROUTE_PREFIX + "not-a-token", {"pages": ["forged"]}).status == 403
    expired = sign_callback_token(container.callback_urls.secret, project_id=project_id, document_id=doc.id,
                                  generation=doc.ingest_generation, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    r = anonymous.post(CALLBACK_ROUTE_PREFIX + expired, {"pages": ["late"]})
    assert r.status == 403 and "expired" in r.json["error"]["message"]
    other = sign_callback_token(b"another secret" * 3, project_id=project_id, document_id=doc.id,
                                generation=doc.ingest_generation, expires_at=datetime.now(UTC) + timedelta(hours=1))
    assert anonymous.post(CALLBACK_ROUTE_PREFIX + other, {"pages": ["forged"]}).status == 403
    # When the converter delivers the pages to its callback URL (no API key: the URL is the credential)
    r = anonymous.post(callback, {"pages": [{"page": 1, "text": "harbour chart with the northern breakwater"},
                                            {"page": 2, "text": "soundings near the pier"}]})
    assert r.status == 200 and r.json == {"status": "accepted", "document_id": doc.id, "pages": 2}
    thread.join(30)
    # Then the run finishes and the document is searchable by the delivered text
    assert outcome and outcome[0].status == "succeeded", outcome
    ready = container.documents.get(project_id, doc.id)
    assert ready.status.value == "ready" and ready.total_pages == 2
    assert _search(reader, "northern breakwater", "/scans/")[0]["document_id"] == doc.id
    # And a second callback is harmless: nothing changes
    again = anonymous.post(callback, {"pages": ["something else entirely"]})
    assert again.status == 200 and again.json["status"] == "already_received"
    assert container.documents.get(project_id, doc.id).active_generation == ready.active_generation
    assert _events(container, c.DETAIL_TYPE_DOCUMENT_READY, doc.id)


def test_a_deferred_converter_that_never_calls_back_fails_at_the_deadline(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str) -> None:
    # Given a converter that answers pending and never delivers, and a 2-second deadline
    _rule(admin, "image/png", converter.url("/pending"))
    urls = container.callback_urls
    saved, urls.deadline_seconds = urls.deadline_seconds, 2
    try:
        # When the file is ingested
        result = upload_and_ingest(container, project_id, "/scans/never.png", b"\x89PNG never", content_type="image/png")
    finally:
        urls.deadline_seconds = saved
    # Then the document ends failed saying the converter missed its deadline
    assert result.status == "failed"
    doc = container.documents.find_by_path(project_id, "/scans/never.png")
    assert doc is not None and doc.status.value == "failed" and doc.error is not None
    assert "did not deliver the pages" in doc.error and "within 2 s" in doc.error and converter.url("/pending") in doc.error
    # And document.failed was published with the error
    failed = _events(container, c.DETAIL_TYPE_DOCUMENT_FAILED, doc.id)[-1]
    assert failed["path"] == "/scans/never.png" and failed["error"] == doc.error
    # And a callback after the deadline is refused: the URL expired (or the document no longer waits)
    body = converter.last()["body"]
    late = ApiClient(None).post("/" + body["callback_url"].split("://", 1)[1].split("/", 1)[1], {"pages": ["late"]})
    assert late.status in (403, 409)


def test_a_callback_reporting_an_error_fails_the_document_with_it(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str) -> None:
    _rule(admin, "image/jpeg", converter.url("/pending"))
    key = f"projects/{project_id}/scans/blurry.jpg"
    container.blob_store.put(key, b"\xff\xd8 blurry", content_type="image/jpeg")
    from tests.support.ingestion import object_created_event

    outcome: list[PipelineResult] = []
    count = len(converter.requests) + 1
    thread = threading.Thread(target=lambda: outcome.append(fast_runner(container).run(
        object_created_event(container.blob_store.bucket, key, 10))))
    thread.start()
    body = converter.wait_for_request(count)["body"]
    callback = "/" + body["callback_url"].split("://", 1)[1].split("/", 1)[1]
    r = ApiClient(None).post(callback, {"error": "the scan is too blurry to read"})
    assert r.status == 422 and "too blurry" in r.json["error"]["message"]
    thread.join(30)
    assert outcome and outcome[0].status == "failed"
    doc = container.documents.find_by_path(project_id, "/scans/blurry.jpg")
    assert doc is not None and doc.status.value == "failed" and "too blurry to read" in (doc.error or "")


@pytest.mark.parametrize(("path", "expected"), [
    ("/slow", "did not answer within 1 s"),
    ("/garbage", "did not answer JSON"),
    ("/not-pages", "answered neither `pages`"),
    ("/huge", "larger than 16 MB"),
    ("/fail", "answered HTTP 500"),
    ("/redirect", "answered HTTP 302 (redirects are not followed"),
])
def test_a_failing_converter_ends_the_document_failed_with_the_reason(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str,
        path: str, expected: str) -> None:
    # Given a rule to a converter that times out (timeout_s 1) / answers garbage / too much / an error
    # (timeout_s 30: sending 16 MB can take over a second on a loaded machine, and that case is about size)
    _rule(admin, "application/x-broken", converter.url(path), converter={"timeout_s": 1 if path == "/slow" else 30})
    # When a file is ingested
    name = f"/broken{path}.bin"
    result = upload_and_ingest(container, project_id, name, b"some bytes", content_type="application/x-broken")
    # Then the run ends failed (never stuck in processing) with a message saying what went wrong
    assert result.status == "failed"
    doc = container.documents.find_by_path(project_id, name)
    assert doc is not None and doc.status.value == "failed"
    assert expected in (doc.error or ""), doc.error
    assert converter.url(path) in (doc.error or "")
    # And the error never quotes what the converter sent (its bytes could be anything it can reach)
    assert not any(peer in (doc.error or "") for peer in ("exploded", "licences", "<html", "Internal converter"))


def test_an_ocr_rule_without_an_ocr_engine_fails_naming_what_to_install(
        container: LocalContainer, admin: ApiClient, project_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a machine with no OCR engine (where Tesseract is installed, the ports without it)
    monkeypatch.setitem(container.__dict__, "ingestion_ports", dataclasses.replace(container.ingestion_ports, ocr=None))
    r = admin.post("/v1/ingestion-rules", {"content_type_glob": "image/gif", "converter": {"type": "ocr"}})
    assert r.status == 201, r.json
    result = upload_and_ingest(container, project_id, "/scans/a.gif", b"GIF89a", content_type="image/gif")
    assert result.status == "failed"
    assert "apt-get install tesseract-ocr" in (result.error or "") and "Textract" in (result.error or "")


def test_pages_of_helper_splits_on_form_feeds() -> None:
    assert pages_of({"body": {"file": base64.b64encode(b"a\fb").decode()}}) == [
        {"page": 1, "text": "converted a"}, {"page": 2, "text": "converted b"}]
