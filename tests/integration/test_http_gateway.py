"""The local gateway as a hostile client meets it: raw bytes over a real socket (issue 11, defect 8).

Every malformed request gets a 4xx with the SPEC's JSON error body, never a 500 or HTML, and no
response names the Python version."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from memory_engine.bootstrap import Container
from memory_engine.local.http_gateway import LocalGateway


@pytest.fixture(scope="module")
def gateway(container: Container) -> Iterator[tuple[str, int]]:
    server = LocalGateway("127.0.0.1", 0)
    server.start()
    host, port = server.base_url.removeprefix("http://").split(":")
    yield host, int(port)
    server.stop()


def _exchange(address: tuple[str, int], data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes; parse one response (status, lower-cased headers, body)."""
    with socket.create_connection(address, timeout=15) as sock:
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed without a response: {received!r}"
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return status, headers, body


MALFORMED = {
    "byte \\xff in a JSON body": (
        b'POST /v1/memories HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\n'
        b'Content-Length: 13\r\n\r\n{"name": "\xff"}', 400),
    "negative Content-Length": (
        b"POST /v1/memories HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nContent-Length: -5\r\n\r\n", 400),
    "non-numeric Content-Length": (
        b"POST /v1/memories HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nContent-Length: abc\r\n\r\n", 400),
    "two different Content-Lengths": (
        b"POST /v1/memories HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400),
    "Content-Length over 10 MB": (
        b"POST /v1/memories HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nContent-Length: 20000000\r\n\r\n", 413),
    "malformed chunked body": (
        b"POST /v1/memories HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    "NUL in the path, percent-encoded": (
        b"GET /v1/memories/mem_%00x HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n\r\n", 400),
    "NUL in an upload token": (
        b"PUT /v1/local-uploads/cHJv%00amVjdHM HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n"
        b"Content-Length: 1\r\n\r\nx", 400),
    "raw NUL in the path": (b"GET /v1/memories/\x00 HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    "NUL in a header value": (b"GET /v1/memories HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer me_\x00x\r\n\r\n", 400),
    "request line over 64 KB": (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414),
    "more than 100 headers": (
        b"GET /v1/health HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(120)) + b"\r\n", 431),
    "unknown method": (b"BREW /v1/health HTTP/1.1\r\nHost: t\r\n\r\n", 405),
    "garbage request line": (b"GARBAGE\r\n\r\n", 400),
    "HTTP/0.9 request": (b"GET /v1/health\r\n", 400),
    "unsupported HTTP version": (b"GET /v1/health HTTP/3.0\r\nHost: t\r\n\r\n", 400),
    "absolute-form target": (b"GET http://evil.example/v1/health HTTP/1.1\r\nHost: t\r\n\r\n", 400),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_http_gets_a_4xx_json_error_and_no_version_banner(
    gateway: tuple[str, int], api: object, case: str
) -> None:
    # Given a hostile request (with a valid key where one is needed)
    raw, expected = MALFORMED[case]
    raw = raw.replace(b"{key}", str(getattr(api, "key")).encode())
    # When it is sent over the socket
    status, headers, body = _exchange(gateway, raw)
    # Then the answer is that 4xx, with the SPEC error body as JSON, and no Python version
    assert status == expected, body
    assert headers.get("content-type", "").startswith("application/json")
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message", "details"} and error["code"] and error["message"]
    assert headers.get("server") == "memory-engine"


def test_a_chunked_body_is_read_and_the_connection_stays_usable(gateway: tuple[str, int], api: object) -> None:
    # Given a keep-alive connection carrying a chunked request followed by a second request
    key = str(getattr(api, "key"))
    body = b'{"input": "hello"}'
    first = (f"POST /v1/embeddings HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n"
             "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    first += b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    second = b"GET /v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    # When both are sent at once
    with socket.create_connection(gateway, timeout=15) as sock:
        sock.sendall(first + second)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    # Then both got their answer: the chunked body was read whole, nothing leaked into the next request
    assert received.startswith(b"HTTP/1.1 200") and received.count(b"HTTP/1.1 200") == 2
    assert b'"embedding"' in received and b'"database":true' in received
