"""PUT /v1/local-uploads/{token}: the local stand-in for a presigned S3 PUT.

The token is signed and expiring (``domain.upload_tokens``): like a presigned S3 URL it alone
authorizes the PUT (no API key is needed, and none is ever handed out with the URL). It names one
object key ``projects/<project_id>/<path>``; the path passes the same rule as ``POST /v1/documents``.
The body is written into ``$MEMORY_ENGINE_HOME/drop/<project name>/<path>`` atomically (temp file +
rename), where the drop-folder watcher picks it up: the upload then runs the same pipeline as a
dropped file. A forged, malformed or expired token is 403, as S3 answers.
"""

from __future__ import annotations

import base64
import logging
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from memory_engine.adapters.local.files import atomic_write
from memory_engine.bootstrap import get_container
from memory_engine.domain.upload_tokens import InvalidUploadToken
from memory_engine.domain.validation import project_name
from memory_engine.errors import Conflict, Forbidden, NotFound
from memory_engine.http.responses import json_response
from memory_engine.http.schemas import UploadStored, documented
from memory_engine.ports.blobs import BlobStoreError

logger = logging.getLogger(__name__)
router = Router()

#: The route's prefix: the resolver lets these requests through without an API key (the token is the credential).
ROUTE_PREFIX = "/v1/local-uploads/"


@router.put("/v1/local-uploads/<token>", summary="Upload a file (local stand-in for a presigned S3 PUT)",
            responses=documented({200: (UploadStored, "stored in the drop folder; ingestion follows")},
                                 400, 403, 404, 409, 413, 422, 503))
def put_upload(token: str) -> Response[Any]:
    c = get_container()
    verify = getattr(c.blob_store, "verify_upload", None)
    if verify is None:  # the S3 store: uploads go to the presigned S3 URL, never here
        raise NotFound("upload URL not found")
    try:
        grant = verify(unquote(token))
    except InvalidUploadToken as exc:
        raise Forbidden("upload URL is invalid or expired; request a new one from POST /v1/documents/uploads",
                        details={"reason": str(exc)}) from exc
    project = c.projects.get_project(grant.project_id)
    if project is None or project.id != grant.project_id:
        raise NotFound("upload URL not found")
    try:
        folder = project_name(project.name)
    except ValueError as exc:  # a project named before names were slugs: it has no safe drop folder
        raise Conflict(f"project {project.id} has no valid drop folder name; uploads to it are refused") from exc
    event = router.current_event.raw_event
    raw = event.get("body") or ""
    data = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode("utf-8")
    drop_root = c.settings.drop_dir
    project_root = drop_root / folder
    target = project_root / grant.path.lstrip("/")
    if project_root.resolve() not in target.resolve().parents:  # e.g. a symlinked folder pointing elsewhere
        raise Forbidden("upload path is outside the project's folder")
    try:
        atomic_write(target, data, staging_dir=drop_root / ".incoming")  # hidden: the watcher never reads half a file
    except OSError as exc:
        logger.warning("writing the upload of %s failed: %s", grant.key, exc)
        raise BlobStoreError(f"storing the upload of {grant.key} failed; try again") from exc
    return json_response({"key": grant.key, "path": grant.path, "size": len(data)}, 200)
