"""POST /v1/converter-callbacks/{token}: a converter that answered ``{"status": "pending"}``
delivers the pages here (``{"pages": [...]}``, or ``{"error": "..."}``).

The signed, expiring token in the URL is the credential (no API key): a forged, malformed or
expired one is 403. The first valid delivery resumes the waiting ingestion run; a repeat answers
``already_received`` and changes nothing.
"""

from __future__ import annotations

import base64
from dataclasses import asdict
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from memory_engine.bootstrap import get_container
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import CallbackReceived, documented
from memory_engine.services.ingestion.callbacks import receive_callback

router = Router()


@router.post("/v1/converter-callbacks/<token>", summary="Deliver a deferred conversion's pages",
             description=("For converters that answered `{\"status\": \"pending\"}`: POST `{\"pages\": [{\"page\": 1, "
                          "\"text\": \"...\"}]}` (or `{\"error\": \"...\"}`) to the `callback_url` the engine sent, "
                          "before it expires (the conversion's deadline). No API key: the URL is the credential. "
                          "403 for a forged or expired URL, 409 when the document no longer waits (superseded, "
                          "failed at the deadline), 422 for a bad body (the document then ends `failed` with the "
                          "reason). A repeat after the first delivery answers `already_received`."),
             responses=documented({200: (CallbackReceived, "delivered (or already received)")},
                                  400, 403, 404, 409, 413, 422, 503))
def deliver(token: str) -> Response[Any]:
    event = router.current_event.raw_event
    raw = event.get("body") or ""
    data = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode("utf-8")
    receipt = receive_callback(get_container().ingestion_ports, unquote(token), data)
    return json_response(asdict(receipt), 200)
