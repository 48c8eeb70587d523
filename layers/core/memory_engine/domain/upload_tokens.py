"""Signed upload tokens: the local stand-in for a presigned S3 PUT URL.

A token grants one thing: PUT the bytes of one object key (``projects/<project_id>/<path>``)
before it expires. It is ``<payload>.<signature>``, both URL-safe base64 without padding: the
payload is compact JSON ``{"v": 1, "use": "local-upload", "key", "project_id", "exp"}`` and the
signature is HMAC-SHA256 over ``"memory-engine/local-upload/v1." + payload`` with a secret only the
server knows (kept in ``$MEMORY_ENGINE_HOME``). A caller can neither forge one for another path
or project nor stretch its expiry; the path inside is checked again with the one path rule when
the token is used. Pure functions: the secret is passed in.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from memory_engine.domain.validation import document_path

#: Domain separation: a signature made for anything else never verifies as an upload token.
PURPOSE = "local-upload"
#: The same token shape for a signed local GET of one object (a converter's ``download_url``).
DOWNLOAD_PURPOSE = "local-download"
_CONTEXT = b"memory-engine/local-upload/v1."
MAX_TOKEN_CHARS = 4096


class InvalidUploadToken(ValueError):
    """The token is malformed, forged, for another purpose, or expired."""


@dataclass(frozen=True)
class UploadGrant:
    """What a valid token allows: PUT ``key`` (``projects/<project_id>/<path>``) until ``expires_at``."""

    key: str
    project_id: str
    path: str
    expires_at: datetime


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(secret: bytes, payload: str) -> str:
    return _b64(hmac.new(secret, _CONTEXT + payload.encode("ascii"), hashlib.sha256).digest())


def sign_upload_token(secret: bytes, *, key: str, project_id: str, expires_at: datetime,
                      purpose: str = PURPOSE) -> str:
    """A token for PUT of ``key`` (GET with ``purpose=DOWNLOAD_PURPOSE``); ``key`` must be
    ``projects/<project_id>/<valid path>``."""
    body = {"v": 1, "use": purpose, "key": key, "project_id": project_id, "exp": int(expires_at.timestamp())}
    payload = _b64(json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode("ascii"))
    return f"{payload}.{_signature(secret, payload)}"


def verify_upload_token(secret: bytes, token: str, *, now: datetime, key_prefix: str = "projects/",
                        purpose: str = PURPOSE) -> UploadGrant:
    """The grant of a valid token. Raises :class:`InvalidUploadToken` (never anything else) when the
    token is malformed, its signature does not match, it is for another purpose, it expired, or its
    key is not ``<key_prefix><project_id>/<path>`` with a path the one path rule accepts."""
    if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
        raise InvalidUploadToken("malformed upload token")
    payload, signature = token.split(".")
    try:
        payload.encode("ascii")
        signature.encode("ascii")
    except UnicodeEncodeError:
        raise InvalidUploadToken("malformed upload token") from None
    if not hmac.compare_digest(_signature(secret, payload), signature):
        raise InvalidUploadToken("upload token signature does not match")
    try:
        body = json.loads(_unb64(payload))
        key, project_id, expires = str(body["key"]), str(body["project_id"]), int(body["exp"])
        use = body.get("use")
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise InvalidUploadToken("malformed upload token") from exc
    if use != purpose:
        raise InvalidUploadToken(f"not a {purpose} token")
    expires_at = datetime.fromtimestamp(expires, UTC)
    if now >= expires_at:
        raise InvalidUploadToken("upload token expired")
    prefix = f"{key_prefix}{project_id}/"
    if not project_id or not key.startswith(prefix):
        raise InvalidUploadToken("upload token key is outside its project")
    try:
        path = document_path(key[len(prefix):])
    except ValueError as exc:
        raise InvalidUploadToken(f"upload token path is invalid: {exc}") from exc
    if f"{prefix}{path.lstrip('/')}" != key:
        raise InvalidUploadToken("upload token path is not canonical")
    return UploadGrant(key=key, project_id=project_id, path=path, expires_at=expires_at)
