"""PUT /v1/local-uploads/{token}: the local stand-in for a presigned S3 PUT.

The token is the URL-safe base64 of the object key ``projects/<project_id>/<path>`` (one path
segment). The body is written into ``$MEMORY_ENGINE_HOME/drop/<project name>/<path>``
atomically (temp file + rename), where the drop-folder watcher picks it up: the upload then
runs the same pipeline as a dropped file. Needs a write key of the same project.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from memory_engine.adapters.local.files import atomic_write
from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.errors import BadRequest, NotFound
from memory_engine.http.auth import require
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import AUTHENTICATED, UploadStored, documented
from memory_engine.services.ingestion.steps import split_key

router = Router()


def key_from_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(unquote(token) + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise BadRequest("malformed upload URL; request a new one from POST /v1/documents/uploads") from exc


@router.put("/v1/local-uploads/<token>", summary="Upload a file (local stand-in for a presigned S3 PUT)",
            responses=documented({200: (UploadStored, "stored in the drop folder; ingestion follows")},
                                 *AUTHENTICATED, 400, 404, 413, 422))
def put_upload(token: str) -> Response[Any]:
    principal = require(router, Scope.WRITE)
    key = key_from_token(token)
    project_id, path = split_key(key)
    if project_id != principal.project_id:
        raise NotFound("upload URL not found")  # another project's key: 404, never 403
    c = get_container()
    project = c.projects.get_project(project_id)
    if project is None:
        raise NotFound("upload URL not found")
    event = router.current_event.raw_event
    raw = event.get("body") or ""
    data = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode("utf-8")
    drop_root = c.settings.drop_dir
    target = drop_root / project.name / path.lstrip("/")
    if drop_root.resolve() not in target.resolve().parents:
        raise BadRequest("invalid upload path")
    atomic_write(target, data, staging_dir=drop_root / ".incoming")  # hidden: the watcher never reads half a file
    return json_response({"key": key, "path": path, "size": len(data)}, 200)
