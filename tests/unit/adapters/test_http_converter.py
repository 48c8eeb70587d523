"""The ``http`` converter adapter over the guarded transport, against local servers and an injected
resolver (issue 34, defects 1 and 3a): https is verified against the URL's host although the
connection goes to the vetted address, and ``timeout_s`` also bounds a name lookup that hangs."""

from __future__ import annotations

import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from memory_engine.adapters.extractors.http_converter import HttpConverter
from memory_engine.adapters.outbound.guard import ResolvingOutboundGuard
from memory_engine.adapters.outbound.transport import GuardedTransport
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.domain.outbound import IPAddress
from tests.unit.domain.test_outbound import REFUSED_URLS

LOOPBACK = [ipaddress.ip_address("127.0.0.1")]


def _loopback(host: str, port: int) -> list[IPAddress]:
    return list(LOOPBACK)


def _guard(resolve: object = _loopback) -> ResolvingOutboundGuard:
    return ResolvingOutboundGuard("converter.test", resolve=resolve)  # type: ignore[arg-type]


class _RecordingBackend(httpcore.SyncBackend):
    """Records every connection attempt and makes none."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, int]] = []

    def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        self.connects.append((host, port))
        raise httpcore.ConnectError("no network in this test")


def _recording_client(guard: ResolvingOutboundGuard) -> tuple[httpx.Client, list[tuple[str, int]]]:
    backend = _RecordingBackend()
    return httpx.Client(transport=GuardedTransport(guard, network_backend=backend), trust_env=False), backend.connects


def _certificate(tmp: Path, host: str) -> tuple[Path, Path, bytes]:
    """A self-signed certificate for ``host``: (cert file, key file, PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_file, key_file = tmp / f"{host}.crt", tmp / f"{host}.key"
    cert_file.write_bytes(pem)
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file, pem


@contextmanager
def _tls_converter(tmp: Path, served_name: str) -> Iterator[tuple[int, list[str | None]]]:
    """An https converter on 127.0.0.1 with a certificate for ``served_name``; yields its port and
    the server names (SNI) clients asked for."""
    cert_file, key_file, _ = _certificate(tmp, served_name)
    asked: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.sni_callback = lambda _sock, name, _ctx: asked.append(name)  # type: ignore[assignment,func-returns-value]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = json.dumps({"text": f"converted for {self.headers['Host']}"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], asked
    finally:
        server.shutdown()
        server.server_close()


def _trusting(tmp: Path, host: str) -> ssl.SSLContext:
    """A client context that trusts only the self-signed certificate of ``host`` (made by the server)."""
    return ssl.create_default_context(cafile=str(tmp / f"{host}.crt"))


def test_https_is_verified_against_the_urls_host_while_connecting_to_the_vetted_address(tmp_path: Path) -> None:
    # Given an https converter whose certificate names converter.test, reached at 127.0.0.1 (allowed)
    guard = _guard()
    with _tls_converter(tmp_path, "converter.test") as (port, asked):
        client = httpx.Client(transport=GuardedTransport(guard, ssl_context=_trusting(tmp_path, "converter.test")),
                              trust_env=False)
        # When the engine calls it by name
        answer = HttpConverter(guard, client).send(f"https://converter.test:{port}/convert", {"file": "x"},
                                                   headers={}, timeout_s=10)
        # Then TLS asked for converter.test (SNI), the certificate check passed for that name, and the
        # request named the host (connected to the address the guard vetted)
        assert json.loads(answer) == {"text": f"converted for converter.test:{port}"}
        assert asked == ["converter.test"]


def test_https_to_a_certificate_for_another_name_fails(tmp_path: Path) -> None:
    # Given a server at the vetted address whose certificate names someone else
    guard = _guard()
    with _tls_converter(tmp_path, "other.test") as (port, _):
        client = httpx.Client(transport=GuardedTransport(guard, ssl_context=_trusting(tmp_path, "other.test")),
                              trust_env=False)
        # Then the certificate is checked against converter.test, not the IP, and the call fails
        with pytest.raises(ConverterFailed, match="could not be reached"):
            HttpConverter(guard, client).send(f"https://converter.test:{port}/convert", {}, headers={}, timeout_s=10)


def test_a_name_lookup_that_hangs_ends_at_the_deadline() -> None:
    # Given a resolver that does not answer for a long time (a slow or hostile name server)
    release, answered = threading.Event(), threading.Event()

    def stuck(host: str, port: int) -> list[IPAddress]:
        release.wait(30)
        answered.set()
        return list(LOOPBACK)

    try:
        # When the engine calls a converter by that name, Then the call ends at its deadline as a timeout,
        # while the lookup is still hanging
        with pytest.raises(ConverterFailed, match=r"did not answer within 0.3 s"):
            HttpConverter(_guard(stuck)).send("http://converter.test:9/", {}, headers={}, timeout_s=0.3)
        assert not answered.is_set()
    finally:
        release.set()


def test_a_rule_write_does_not_wait_long_for_a_hanging_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a resolver that hangs, and a short write-time budget
    from memory_engine.adapters.outbound import guard as guard_module

    monkeypatch.setattr(guard_module, "WRITE_CHECK_RESOLVE_SECONDS", 0.2)
    release, answered = threading.Event(), threading.Event()

    def stuck(host: str, port: int) -> list[IPAddress]:
        release.wait(30)
        answered.set()
        return [ipaddress.ip_address("10.0.0.1")]

    try:
        # When a rule names it, Then the write-time check gives up waiting (the call-time check decides)
        ResolvingOutboundGuard(resolve=stuck).check_url("https://slow-dns.example.com/convert")
        assert not answered.is_set()
    finally:
        release.set()


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_every_internal_address_form_is_refused_at_call_time_before_connecting(url: str) -> None:
    # Given no allowed hosts, and names that would resolve to a public address (so a name is refused by
    # its name, and nothing here may fall through to a connection attempt)
    guard = ResolvingOutboundGuard(resolve=lambda host, port: [ipaddress.ip_address("93.184.216.34")])
    client, connects = _recording_client(guard)
    # When the engine calls a converter there (however httpx reads the URL), Then it refuses before connecting
    with pytest.raises(ConverterFailed, match="was not called"):
        HttpConverter(guard, client).send(url, {}, headers={}, timeout_s=5)
    assert connects == []


@pytest.mark.parametrize("resolved", ["127.0.0.1", "10.0.0.5", "172.31.0.9", "192.168.7.7", "100.64.0.1",
                                      "169.254.169.254", "169.254.170.2", "0.0.0.0", "224.0.0.1", "::1", "::",
                                      "::ffff:127.0.0.1", "::ffff:a9fe:a9fe", "64:ff9b::7f00:1", "fd00:ec2::254",
                                      "fe80::1", "ff02::1"])
def test_a_name_that_resolves_inside_at_call_time_is_never_connected_to(resolved: str) -> None:
    # Given a name that resolves to a public address and to an internal one (DNS rebinding, or a mixed answer)
    answers = [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address(resolved)]
    guard = ResolvingOutboundGuard(resolve=lambda host, port: list(answers))
    client, connects = _recording_client(guard)
    # When the engine calls it, Then no address is connected to (not even the public one) and the error
    # names the internal address
    with pytest.raises(ConverterFailed, match=f"resolves to {ipaddress.ip_address(resolved)}"):
        HttpConverter(guard, client).send("https://converter.example.com/convert", {}, headers={}, timeout_s=5)
    assert connects == []


def test_an_encoded_answer_is_read_as_sent_never_decompressed() -> None:
    # Given a converter that answers gzip although the engine asked for identity (a decompression bomb
    # would be a few KB on the wire and gigabytes once inflated)
    import gzip

    packed = gzip.compress(b'{"text": "' + b"a" * 100_000 + b'"}')
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            seen.append(self.headers.get("accept-encoding"))
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(packed)))
            self.end_headers()
            self.wfile.write(packed)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        answer = HttpConverter(_guard()).send(f"http://converter.test:{server.server_address[1]}/", {},
                                              headers={}, timeout_s=10)
    finally:
        server.shutdown()
        server.server_close()
    # Then the engine asked for identity and got the bytes as sent (they fail later as "not JSON")
    assert seen == ["identity"] and answer == packed
