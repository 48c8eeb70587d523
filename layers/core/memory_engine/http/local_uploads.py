"""PUT /v1/local-uploads/{token}: the local stand-in for a presigned S3 PUT.

The token in the URL is the credential (no API key; see ``services.ingestion.uploads``): a forged,
malformed or expired one is 403, as S3 answers. The body lands in the drop folder, where the watcher
picks it up: the upload then runs the same pipeline as a dropped file.
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
from memory_engine.http.schemas import UploadStored, documented
from memory_engine.services.ingestion.uploads import receive_upload

router = Router()

#: The route's prefix: the resolver lets these requests through without an API key (the token is the credential).
ROUTE_PREFIX = "/v1/local-uploads/"


@router.put("/v1/local-uploads/<token>", summary="Upload a file (local stand-in for a presigned S3 PUT)",
            responses=documented({200: (UploadStored, "stored in the drop folder; ingestion follows")},
                                 400, 403, 404, 409, 413, 422, 503))
def put_upload(token: str) -> Response[Any]:
    c = get_container()
    event = router.current_event.raw_event
    raw = event.get("body") or ""
    data = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode("utf-8")
    stored = receive_upload(c.upload_inbox, c.projects, unquote(token), data)
    return json_response(asdict(stored), 200)
