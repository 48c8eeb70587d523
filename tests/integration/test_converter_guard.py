"""Converters that cannot reach inside (issue 34, defects 1-3a), through the real API handler and
the local pipeline:

* a converter URL on a loopback, private, link-local, unique-local, multicast, unspecified or
  metadata address (any spelling) is a 422 when the rule is written, and is refused again when the
  call is made, on the address the name resolves to then (DNS rebinding), before any byte is sent;
* the connection goes to the address the guard vetted, with the URL's host kept in ``Host``;
* header values are write-only: masked to every scope, kept when a PUT sends the mask back;
* ``timeout_s`` is a deadline on the whole answer: a converter dripping bytes fails at it.

The resolver is injected (:func:`tests.support.converter.allowing_converters`), so no test depends on
real DNS.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import pytest

from memory_engine.domain.ingestion_rules import IngestionRuleFields
from memory_engine.domain.outbound import IPAddress
from memory_engine.local.container import LocalContainer
from tests.support.api_client import ApiClient
from tests.support.converter import ConverterService, allowing_converters, converter_service
from tests.support.ingestion import upload_and_ingest
from tests.support.rules import admin_fixture, clean_rules_fixture, reader_fixture  # noqa: F401 - fixtures
from tests.unit.domain.test_outbound import REFUSED_URLS

PROJECT = "convert-guard"
PUBLIC = ipaddress.ip_address("93.184.216.34")


class Resolver:
    """An injected resolver: ``answers[name]`` is the list it gives next (the last one repeats)."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[IPAddress]]] = {}
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        queue = self.answers.get(host)
        if not queue:
            raise OSError(f"{host}: Name or service not known")
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def set(self, host: str, *answers: str) -> None:
        self.answers[host] = [[ipaddress.ip_address(a)] for a in answers]


@pytest.fixture(scope="module")
def converter() -> Iterator[ConverterService]:
    with converter_service() as service:
        yield service


@pytest.fixture(scope="module")
def resolver() -> Resolver:
    return Resolver()


@pytest.fixture(scope="module")
def guarded(container: LocalContainer, converter: ConverterService, resolver: Resolver) -> Iterator[None]:
    """The container's guard with the injected resolver; CONVERTER_ALLOWED_HOSTS names only
    ``converter.test`` on the stub's port (whatever it resolves to)."""
    with allowing_converters(container, f"converter.test:{_port(converter)}", resolve=resolver):
        yield


@pytest.fixture(scope="module")
def project_id(container: LocalContainer, admin: ApiClient) -> str:
    return container.projects.get_or_create_project(PROJECT).id


def _port(converter: ConverterService) -> int:
    return int(converter.base_url.rsplit(":", 1)[1])


def _rule(url: str, **converter: Any) -> dict[str, Any]:
    return {"content_type_glob": "application/x-guarded", "converter": {"type": "http", "url": url, **converter}}


def _document_error(container: LocalContainer, project_id: str, path: str) -> str:
    doc = container.documents.find_by_path(project_id, path)
    assert doc is not None and doc.status.value == "failed", doc
    return doc.error or ""


# --- defect 1: SSRF ---
@pytest.mark.usefixtures("guarded")
@pytest.mark.parametrize("url", REFUSED_URLS)
def test_a_rule_pointing_inside_is_a_422_on_create_and_replace(admin: ApiClient, resolver: Resolver, url: str) -> None:
    # Given names that resolve to a public address (a metadata name is refused by name, not by address)
    for name in ("metadata.google.internal", "metadata", "instance-data.ec2.internal", "metadata.azure.internal",
                 "db.localhost", "localhost"):
        resolver.set(name, str(PUBLIC))
    # When an admin writes a rule whose converter URL is an internal address in any spelling
    r = admin.post("/v1/ingestion-rules", _rule(url))
    # Then it is a 422 naming the converter URL and the operator's way out, and nothing is stored
    assert r.status == 422, r.json
    assert [d["field"] for d in r.json["error"]["details"]] == ["converter.http.url"]
    assert "CONVERTER_ALLOWED_HOSTS" in r.json["error"]["message"]
    assert admin.get("/v1/ingestion-rules").json["data"] == []
    # And replacing a valid rule with it is refused the same way, leaving the rule as it was
    rule = admin.post("/v1/ingestion-rules", _rule("https://93.184.216.34/convert")).json
    replaced = admin.put(f"/v1/ingestion-rules/{rule['id']}", _rule(url))
    assert replaced.status == 422, replaced.json
    assert admin.get(f"/v1/ingestion-rules/{rule['id']}").json["converter"]["url"] == "https://93.184.216.34/convert"


@pytest.mark.usefixtures("guarded")
def test_a_name_resolving_inside_is_a_422_and_an_unresolvable_one_waits_for_the_call(
        admin: ApiClient, resolver: Resolver) -> None:
    resolver.set("intranet.example.com", "10.0.0.8")
    r = admin.post("/v1/ingestion-rules", _rule("https://intranet.example.com/convert"))
    assert r.status == 422 and "resolves to 10.0.0.8" in r.json["error"]["message"], r.json
    # A name that does not resolve yet is accepted: the call-time check decides
    assert admin.post("/v1/ingestion-rules", _rule("https://not-yet.example.com/convert")).status == 201


@pytest.mark.usefixtures("guarded")
def test_dns_rebinding_is_refused_at_call_time_before_any_byte_is_sent(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, resolver: Resolver,
        project_id: str) -> None:
    # Given a name that resolves to a public address when the rule is written...
    resolver.set("rebind.example.com", str(PUBLIC), "127.0.0.1")
    url = f"http://rebind.example.com:{_port(converter)}/sync"
    assert admin.post("/v1/ingestion-rules", _rule(url)).status == 201
    before = len(converter.requests)
    # ...and to loopback (where the converter stub listens) when the engine calls it
    result = upload_and_ingest(container, project_id, "/rebind.bin", b"secret?", content_type="application/x-guarded")
    # Then the run fails saying the address was refused, and the stub never got a request
    assert result.status == "failed"
    error = _document_error(container, project_id, "/rebind.bin")
    assert "was not called" in error and "resolves to 127.0.0.1" in error and "loopback" in error, error
    assert len(converter.requests) == before


@pytest.mark.usefixtures("guarded")
@pytest.mark.parametrize("spelling", ["127.0.0.1", "2130706433", "[::ffff:127.0.0.1]", "0177.0.0.1"])
def test_a_rule_stored_before_the_guard_is_refused_at_call_time(
        container: LocalContainer, converter: ConverterService, project_id: str, spelling: str) -> None:
    # Given a rule already in the database (written before the write-time check existed)
    url = f"http://{spelling}:{_port(converter)}/sync"
    container.ingestion_rules.create(project_id, IngestionRuleFields.model_validate(_rule(url)))
    before = len(converter.requests)
    # When a file it matches is ingested
    path = f"/stored-{''.join(ch for ch in spelling if ch.isalnum())}.bin"
    result = upload_and_ingest(container, project_id, path, b"x", content_type="application/x-guarded")
    # Then the call is refused before connecting
    assert result.status == "failed"
    assert "was not called" in _document_error(container, project_id, path)
    assert len(converter.requests) == before


@pytest.mark.usefixtures("guarded")
def test_an_allowed_name_is_connected_at_its_vetted_address_with_its_host_header(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, resolver: Resolver,
        project_id: str) -> None:
    # Given CONVERTER_ALLOWED_HOSTS naming converter.test:<port>, which resolves to the stub on loopback
    resolver.set("converter.test", "127.0.0.1")
    url = f"http://converter.test:{_port(converter)}/sync"
    assert admin.post("/v1/ingestion-rules", _rule(url)).status == 201
    # When a file is converted
    result = upload_and_ingest(container, project_id, "/allowed.bin", b"allowed words", content_type="application/x-guarded")
    # Then the engine connected to the address it resolved, and said which host it meant
    assert result.status == "succeeded", result.error
    assert converter.last()["headers"]["Host"] == f"converter.test:{_port(converter)}"
    # And another port of the same (allowed-with-a-port) host is still refused
    assert admin.put(f"/v1/ingestion-rules/{admin.get('/v1/ingestion-rules').json['data'][0]['id']}",
                     _rule(f"http://converter.test:{_port(converter) + 1}/sync")).status == 422


# --- defect 2: header values are write-only ---
@pytest.mark.usefixtures("guarded")
def test_header_values_are_masked_to_every_scope_and_kept_when_sent_back(
        container: LocalContainer, admin: ApiClient, reader: ApiClient, converter: ConverterService,
        resolver: Resolver, project_id: str) -> None:
    resolver.set("converter.test", "127.0.0.1")
    url = f"http://converter.test:{_port(converter)}/sync"
    headers = {"X-Api-Key": "k-123", "Authorization": "Bearer s3cret"}
    # When an admin creates a rule with credentials in its headers
    created = admin.post("/v1/ingestion-rules", _rule(url, headers=headers))
    assert created.status == 201, created.json
    masked = {"X-Api-Key": "***", "Authorization": "***"}
    # Then no answer carries the values (the names stay visible): create, list and get, read or admin key
    assert created.json["converter"]["headers"] == masked
    rule_id = created.json["id"]
    for client in (reader, admin):
        assert client.get("/v1/ingestion-rules").json["data"][0]["converter"]["headers"] == masked
        assert client.get(f"/v1/ingestion-rules/{rule_id}").json["converter"]["headers"] == masked
    # When the admin PUTs back what it read, changing the timeout and one header's value
    edited = admin.get(f"/v1/ingestion-rules/{rule_id}").json
    body = {key: edited[key] for key in ("content_type_glob", "native_extraction", "file_delivery")}
    body["converter"] = {**edited["converter"], "timeout_s": 20,
                         "headers": {"x-api-key": "***", "Authorization": "Bearer n3w"}}
    replaced = admin.put(f"/v1/ingestion-rules/{rule_id}", body)
    assert replaced.status == 200, replaced.json
    assert replaced.json["converter"]["headers"] == {"x-api-key": "***", "Authorization": "***"}
    # Then the converter receives the kept value and the new one
    result = upload_and_ingest(container, project_id, "/masked.bin", b"masked words", content_type="application/x-guarded")
    assert result.status == "succeeded", result.error
    sent = converter.last()["headers"]
    assert (sent.get("x-api-key"), sent.get("Authorization")) == ("k-123", "Bearer n3w")


@pytest.mark.usefixtures("guarded")
def test_a_mask_that_cannot_be_kept_is_a_422(admin: ApiClient, converter: ConverterService, resolver: Resolver) -> None:
    resolver.set("converter.test", "127.0.0.1")
    resolver.set("elsewhere.example.com", str(PUBLIC))
    url = f"http://converter.test:{_port(converter)}/sync"
    # A create has no stored value to keep
    r = admin.post("/v1/ingestion-rules", _rule(url, headers={"X-Api-Key": "***"}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "converter.http.headers", r.json
    rule_id = admin.post("/v1/ingestion-rules", _rule(url, headers={"X-Api-Key": "k-1"})).json["id"]
    # A header the rule does not have
    r = admin.put(f"/v1/ingestion-rules/{rule_id}", _rule(url, headers={"X-Other": "***"}))
    assert r.status == 422, r.json
    # A URL moved to another origin: the credential is not re-sent elsewhere unless written again
    r = admin.put(f"/v1/ingestion-rules/{rule_id}", _rule("https://elsewhere.example.com/c", headers={"X-Api-Key": "***"}))
    assert r.status == 422 and "send the value again" in r.json["error"]["message"], r.json
    assert admin.put(f"/v1/ingestion-rules/{rule_id}",
                     _rule("https://elsewhere.example.com/c", headers={"X-Api-Key": "k-2"})).status == 200


# --- defect 3a: timeout_s bounds the whole answer ---
@pytest.mark.usefixtures("guarded")
def test_a_converter_dripping_its_answer_fails_at_the_deadline(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, resolver: Resolver,
        project_id: str) -> None:
    # Given a converter that sends a valid answer one byte every 0.5 s (18 bytes: 9 s), under timeout_s 1
    # (each read returns well within 1 s, so a per-read timeout never fires)
    resolver.set("converter.test", "127.0.0.1")
    converter.drip_seconds = 0.5
    converter.dripped.clear()
    converter.drip_stopped.clear()
    url = f"http://converter.test:{_port(converter)}/drip"
    assert admin.post("/v1/ingestion-rules", _rule(url, timeout_s=1)).status == 201
    # When a file is converted
    result = upload_and_ingest(container, project_id, "/drip.bin", b"drip", content_type="application/x-guarded")
    # Then the run fails at the deadline, naming it, and the engine hung up before the answer was complete
    assert result.status == "failed"
    error = _document_error(container, project_id, "/drip.bin")
    assert "did not answer within 1 s" in error and "whole answer" in error, error
    assert converter.drip_stopped.wait(15) and not converter.dripped.is_set()
