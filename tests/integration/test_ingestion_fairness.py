"""Local ingestion slots are shared fairly between projects, and a run waiting for a converter's
callback holds none (local/ingestion_slots.py): one tenant's slow or deferred converters cannot
stall another tenant's documents. Real converter services on 127.0.0.1, the real handlers,
database and model; the assertions are about order (B ready while A's conversions are still
unfinished), the timeouts only guard against a hang."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memory_engine.bootstrap import set_container
from memory_engine.domain.converter_protocol import CALLBACK_ROUTE_PREFIX
from memory_engine.domain.requests import CreateTextDocument
from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder
from memory_engine.local.container import LocalContainer
from memory_engine.local.ingestion_slots import LocalPipelineStarter
from memory_engine.services.ingestion.documents import create_text_document
from memory_engine.settings import Settings
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient
from tests.support.ingestion import fast_runner, object_created_event

#: Seconds between two bytes of a dripping converter's answer.
DRIP_EVERY_S = 1.5
#: Only guards against a hang; no assertion is about how long anything took.
GUARD_S = 120.0


@dataclass
class Converters:
    """``/drip``: answers 200 and then one byte every DRIP_EVERY_S, never finishing until ``stop``;
    ``/pending``: answers ``{"status": "pending"}`` (the test posts the pages to the callback URL)."""

    base_url: str
    stop: threading.Event = field(default_factory=threading.Event)
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"/drip": [], "/pending": []})
    dripping: int = 0
    changed: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, predicate: Any, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout=GUARD_S), f"timed out waiting for {what}"


@pytest.fixture(scope="module")
def converters() -> Iterator[Converters]:
    service: Converters

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            with service.changed:
                service.requests.setdefault(self.path, []).append(body)
                service.changed.notify_all()
            if self.path == "/pending":
                payload = b'{"status": "pending"}'
                self.send_response(202)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "100000")
            self.end_headers()
            with service.changed:
                service.dripping += 1
                service.changed.notify_all()
            try:
                while not service.stop.wait(DRIP_EVERY_S):
                    self.wfile.write(b" ")
                    self.wfile.flush()
            except OSError:
                pass  # the engine gave up on the answer
            finally:
                with service.changed:
                    service.dripping -= 1
                    service.changed.notify_all()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    service = Converters(base_url=f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, name="converters", daemon=True)
    thread.start()
    yield service
    service.stop.set()
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def container(database_url: str, embedder: OnnxMiniLMEmbedder, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[LocalContainer]:
    """The module's container, allowed to call converters on 127.0.0.1 (the outbound guard)."""
    home: Path = tmp_path_factory.mktemp("home")
    settings = Settings(DATABASE_URL=database_url, MEMORY_ENGINE_HOME=str(home),  # type: ignore[call-arg]
                        CONVERTER_ALLOWED_HOSTS="127.0.0.1")
    built = LocalContainer(settings, embedder=embedder)
    set_container(built)
    yield built
    set_container(None)
    built.close()


def _rule(admin: ApiClient, glob: str, url: str) -> None:
    r = admin.post("/v1/ingestion-rules", {"content_type_glob": glob, "converter": {"type": "http", "url": url}})
    assert r.status == 201, r.json


def _upload(container: LocalContainer, project_id: str, path: str, data: bytes, content_type: str) -> dict[str, Any]:
    key = f"projects/{project_id}{path}"
    container.blob_store.put(key, data, content_type=content_type)
    return object_created_event(container.blob_store.bucket, key, len(data))


def _text(container: LocalContainer, starter: LocalPipelineStarter, project_id: str, path: str,
          content: str) -> tuple[str, str]:
    doc, started = create_text_document(container.ingestion_ports, starter, project_id,
                                        CreateTextDocument(path=path, content=content))
    assert started
    return doc.id, f"{doc.id}-g{doc.ingest_generation}"


def _callback_path(request: dict[str, Any]) -> str:
    return "/" + str(request["callback_url"]).split("://", 1)[1].split("/", 1)[1]


def test_a_tenants_dripping_and_deferred_converters_do_not_stall_another_tenant(
        container: LocalContainer, make_key: KeyFactory, converters: Converters) -> None:
    # Given project A with a converter that drips its answer and one that answers pending
    a = container.projects.get_or_create_project("fair-a").id
    b = container.projects.get_or_create_project("fair-b").id
    admin_a = ApiClient(make_key("fair-a", "admin"))
    _rule(admin_a, "image/tiff", f"{converters.base_url}/drip")
    _rule(admin_a, "image/png", f"{converters.base_url}/pending")
    starter = LocalPipelineStarter(fast_runner(container), workers=2)
    try:
        # When A uploads 8 documents for the deferred converter and 8 for the dripping one
        pending = [starter.start(_upload(container, a, f"/wait/{i}.png", b"\x89PNG wait %d" % i, "image/png"))
                   for i in range(8)]
        dripping = [starter.start(_upload(container, a, f"/drip/{i}.tiff", b"II*\x00 drip %d" % i, "image/tiff"))
                    for i in range(8)]
        # and every deferred run is parked while the dripping ones hold all of A's slots
        converters.wait_for(lambda: len(converters.requests["/pending"]) == 8, "8 deferred conversions")
        converters.wait_for(lambda: converters.dripping == starter.workers, "every slot dripping")
        assert starter.parked() == 8
        # and then project B adds a plain text document
        b_doc, b_run = _text(container, starter, b, "/b/notes.md", "Project B's notes: the ferry leaves at dawn.")
        # Then B's document is ready while every conversion of A is still unfinished
        assert starter.result(b_run, timeout=GUARD_S).status == "succeeded"
        assert container.documents.get(b, b_doc).status.value == "ready"
        assert [starter.finished(run) for run in pending + dripping] == [None] * 16
        assert converters.dripping == starter.workers and starter.parked() == 8
    finally:
        converters.stop.set()
        starter.shutdown()


def test_a_run_waiting_for_a_callback_holds_no_slot_and_the_callback_resumes_it(
        container: LocalContainer, make_key: KeyFactory, converters: Converters) -> None:
    # Given one ingestion slot and a project whose PNGs go to a converter that answers pending
    project = container.projects.get_or_create_project("park").id
    _rule(ApiClient(make_key("park", "admin")), "image/png", f"{converters.base_url}/pending")
    starter = LocalPipelineStarter(fast_runner(container), workers=1, reserved=0)
    try:
        before = len(converters.requests["/pending"])
        # When a scan is uploaded and its converter answers pending
        scan = starter.start(_upload(container, project, "/scans/chart.png", b"\x89PNG chart", "image/png"))
        converters.wait_for(lambda: len(converters.requests["/pending"]) == before + 1, "the conversion request")
        # Then a text document of the same project is ingested on the only slot meanwhile
        text_doc, text_run = _text(container, starter, project, "/notes/tide.md", "High tide at the weir at noon.")
        assert starter.result(text_run, timeout=GUARD_S).status == "succeeded"
        assert starter.finished(scan) is None and starter.parked() == 1
        # When the converter delivers the pages to its callback URL
        callback = _callback_path(converters.requests["/pending"][before])
        r = ApiClient(None).post(callback, {"pages": [{"page": 1, "text": "chart of the northern breakwater"}]})
        assert r.status == 200 and r.json["status"] == "accepted", r.json
        # Then the parked run is resumed and its document ends ready with the delivered text
        assert starter.result(scan, timeout=GUARD_S).status == "succeeded"
        doc = container.documents.find_by_path(project, "/scans/chart.png")
        assert doc is not None and doc.status.value == "ready" and doc.total_pages == 1
        assert starter.parked() == 0
    finally:
        starter.shutdown()
    assert container.documents.get(project, text_doc).status.value == "ready"


def test_a_parked_run_fails_at_the_conversion_deadline(
        container: LocalContainer, make_key: KeyFactory, converters: Converters) -> None:
    # Given a converter that answers pending and never calls back, and a 2-second deadline
    project = container.projects.get_or_create_project("late").id
    _rule(ApiClient(make_key("late", "admin")), "image/png", f"{converters.base_url}/pending")
    urls = container.callback_urls
    saved, urls.deadline_seconds = urls.deadline_seconds, 2
    starter = LocalPipelineStarter(fast_runner(container), workers=1, reserved=0)
    try:
        # When a scan is ingested
        run = starter.start(_upload(container, project, "/scans/never.png", b"\x89PNG never", "image/png"))
        result = starter.result(run, timeout=GUARD_S)
    finally:
        urls.deadline_seconds = saved
        starter.shutdown()
    # Then the document ends failed saying the converter missed its deadline
    assert result.status == "failed"
    doc = container.documents.find_by_path(project, "/scans/never.png")
    assert doc is not None and doc.status.value == "failed" and doc.error is not None
    assert "did not deliver the pages" in doc.error and "within 2 s" in doc.error
    # And a late callback is refused
    late = ApiClient(None).post(_callback_path(converters.requests["/pending"][-1]), {"pages": ["late"]})
    assert late.status in (403, 409)
    assert CALLBACK_ROUTE_PREFIX in _callback_path(converters.requests["/pending"][-1])
