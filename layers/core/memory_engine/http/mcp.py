"""``POST /v1/mcp``: the MCP server over streamable HTTP, stateless, JSON responses (served by the
API function, so a deployed stack is an MCP endpoint with nothing else to run).

The bearer key is checked by the resolver before routing, as on every route (401 in the SPEC shape
for a wrong key); the route needs ``read``; each tool checks its own scope (``write_memory`` needs
``write``: a read-only key gets a tool error ``forbidden: ...``). Transport-level rejections by the
SDK are answered in the SPEC error shape; JSON-RPC errors travel inside a 200 as MCP says.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, ConfigDict, Field

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.errors import BadRequest, MemoryEngineError, PayloadTooLarge
from memory_engine.http.auth import require
from memory_engine.http.responses import error_response
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, documented

router = Router()

#: The SDK's own error statuses, as the SPEC's errors.
_TRANSPORT_ERRORS: dict[int, type[MemoryEngineError]] = {413: PayloadTooLarge}


class JsonRpcMessage(BaseModel):
    """One JSON-RPC 2.0 message of the MCP protocol (a request, a notification, or a response)."""

    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"]
    id: int | str | None = Field(None, description="absent on notifications")
    method: str | None = Field(None, description="e.g. `initialize`, `tools/list`, `tools/call`")
    params: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class JsonRpcResponse(BaseModel):
    """The JSON-RPC response to a request: `result`, or `error` (`{code, message, data?}`)."""

    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"]
    id: int | str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


@router.post(
    "/v1/mcp",
    summary="MCP (streamable HTTP, stateless)",
    description=(
        "The Model Context Protocol endpoint: POST one JSON-RPC message (`initialize`, `tools/list`, `tools/call`, "
        "...); a request is answered with its JSON-RPC response (200, `application/json`), a notification or a "
        "response with 202. Stateless: no `Mcp-Session-Id`, no server-sent events. Same bearer keys as the API: "
        "the key's project is the MCP session's; `read` is needed to connect, tools that write need `write` (a tool "
        "error otherwise). Tools: search_knowledge, write_memory, list_memories, create_memory, get_memory_entries, "
        "delete_memory_entry, add_document, document_status (see docs/mcp.md)."
    ),
    responses=documented({200: (JsonRpcResponse, "the JSON-RPC response"),
                          202: (None, "a notification or response was accepted")}, *AUTHENTICATED, *WITH_BODY),
)
def mcp(body: Annotated[JsonRpcMessage, Body()]) -> Response[Any]:
    from memory_engine.mcp_server.in_process import InProcessBackend
    from memory_engine.mcp_server.streamable_http import handle_mcp_request
    from memory_engine.mcp_server.tools import build_server

    principal = require(Scope.READ)
    event = router.current_event
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    version = event.headers.get("mcp-protocol-version") or event.headers.get("Mcp-Protocol-Version")
    if version:
        headers["mcp-protocol-version"] = version
    raw = event.decoded_body or ""
    server = build_server(InProcessBackend(get_container(), principal))
    reply = handle_mcp_request(server._mcp_server, raw.encode() if isinstance(raw, str) else raw, headers)
    if reply.status == 200:
        return Response(status_code=200, content_type="application/json", body=reply.body.decode())
    if reply.status == 202:
        return Response(status_code=202, body="")
    return error_response(_transport_error(reply.status, reply.body))


def _transport_error(status: int, body: bytes) -> MemoryEngineError:
    """An SDK rejection (JSON-RPC error body) as the SPEC error."""
    try:
        detail = json.loads(body).get("error") or {}
    except (ValueError, AttributeError):
        detail = {}
    message = str(detail.get("message") or f"MCP transport answered HTTP {status}")
    if status >= 500:
        return MemoryEngineError(f"MCP transport failed: {message}")
    return _TRANSPORT_ERRORS.get(status, BadRequest)(message, details=detail or None)
