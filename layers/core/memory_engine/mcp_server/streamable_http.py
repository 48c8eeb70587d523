"""One MCP streamable-HTTP request, stateless, answered as JSON: what ``POST /v1/mcp`` runs.

A Lambda invocation is one request and one response (no streaming, no session to keep), which is
exactly the transport's stateless JSON mode: the SDK's ``StreamableHTTPSessionManager`` is run for
this one request on a fresh event loop, fed the body as an ASGI request, and its response collected.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

PATH = "/v1/mcp"


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: dict[str, str]
    body: bytes


def handle_mcp_request(server: Server[Any, Any], body: bytes, headers: dict[str, str]) -> HttpReply:
    """Run the MCP transport on one POST (``headers`` lower-cased) and return its reply.

    Blocks the calling thread (which must not be running an event loop) until the response is complete.
    """
    return anyio.run(_handle, server, body, headers)


async def _handle(server: Server[Any, Any], body: bytes, headers: dict[str, str]) -> HttpReply:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)
    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "https",
        "path": PATH, "raw_path": PATH.encode(), "query_string": b"", "root_path": "",
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
        "client": ("127.0.0.1", 0), "server": ("memory-engine", 443),
    }
    done = anyio.Event()
    sent_body = False
    status = 500
    reply_headers: dict[str, str] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            for key, value in message.get("headers", []):
                reply_headers[key.decode("latin-1").lower()] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return HttpReply(status, reply_headers, b"".join(chunks))
