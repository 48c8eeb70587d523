"""Build API Gateway HTTP API (payload format 2.0) events from plain HTTP requests."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded")


def http_api_event(
    method: str,
    path: str,
    *,
    query: str = "",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The event API Gateway would send a Lambda proxy integration for this request.

    Repeated query parameters are comma-joined, header names lower-cased and repeated
    headers comma-joined, and non-text bodies base64-encoded, as API Gateway does.
    """
    lowered: dict[str, str] = {}
    for key, value in (headers or {}).items():
        k = key.lower()
        lowered[k] = f"{lowered[k]},{value}" if k in lowered else value
    params: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        params[key] = f"{params[key]},{value}" if key in params else value
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": lowered,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": lowered.get("host", "127.0.0.1"),
            "domainPrefix": "local",
            "http": {
                "method": method.upper(),
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": False,
    }
    if params:
        event["queryStringParameters"] = params
    if body:
        content_type = lowered.get("content-type", "")
        if content_type.startswith(_TEXT_TYPES):
            try:
                event["body"] = body.decode("utf-8")
                return event
            except UnicodeDecodeError:
                pass
        event["body"] = base64.b64encode(body).decode("ascii")
        event["isBase64Encoded"] = True
    return event


def decode_response(response: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body bytes) from a Lambda proxy response."""
    body = response.get("body") or ""
    raw = base64.b64decode(body) if response.get("isBase64Encoded") else str(body).encode("utf-8")
    headers = {str(k): str(v) for k, v in (response.get("headers") or {}).items()}
    for key, values in (response.get("multiValueHeaders") or {}).items():
        headers[str(key)] = ",".join(str(v) for v in values)
    if response.get("cookies"):
        headers["set-cookie"] = ",".join(response["cookies"])
    return int(response.get("statusCode", 200)), headers, raw
