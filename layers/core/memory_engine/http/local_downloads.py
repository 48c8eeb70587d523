"""GET /v1/local-downloads/{token}: the local stand-in for a presigned S3 GET (a converter's
``download_url``). The signed, expiring token is the credential; a bad one is 403. The answer is the
file's exact bytes with its content type, ``X-Content-Type-Options: nosniff`` and an attachment
``Content-Disposition``."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from memory_engine.bootstrap import get_container
from memory_engine.domain.upload_tokens import InvalidUploadToken
from memory_engine.errors import Forbidden, NotFound
from memory_engine.http.responses import file_response
from memory_engine.http.schemas import documented
from memory_engine.local.adapters.blob_store import LocalBlobStore

router = Router()


@router.get("/v1/local-downloads/<token>", summary="Download a stored file (local stand-in for a presigned S3 GET)",
            responses=documented({200: (None, "the file's bytes")}, 403, 404))
def download(token: str) -> Response[Any]:
    blobs = get_container().blob_store
    if not isinstance(blobs, LocalBlobStore):
        raise NotFound("local downloads exist only with the local blob store")
    try:
        grant = blobs.verify_download(unquote(token))
    except InvalidUploadToken as exc:
        raise Forbidden(str(exc)) from exc
    info = blobs.head(grant.key)
    if info is None:
        raise NotFound("the file is gone")
    return file_response(blobs.get(grant.key), content_type=info.content_type or "application/octet-stream",
                         filename=grant.key.rsplit("/", 1)[-1])
