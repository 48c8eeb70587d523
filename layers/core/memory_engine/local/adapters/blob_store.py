"""BlobStore on a local folder (``$MEMORY_ENGINE_HOME/blobs``): the S3 bucket stand-in.

Writes go to a temporary file and are renamed into place, so a reader never sees half an
object. Content type and metadata live in a ``<name>.meta.json`` sidecar under ``.meta/``.
Errors name the object key, never a server path (they can reach an API client).

Upload URLs (``presign_put``) carry a signed, expiring token (``domain.upload_tokens``) whose
HMAC secret is generated once into ``secret_file`` (mode 0600, default
``$MEMORY_ENGINE_HOME/upload-token.key``): the local stand-in for S3's presigned URL.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_engine.domain.upload_tokens import DOWNLOAD_PURPOSE, UploadGrant, sign_upload_token, verify_upload_token
from memory_engine.errors import InvalidInput, NotFound
from memory_engine.local.adapters.files import atomic_write, read_or_create_secret
from memory_engine.ports.blobs import BlobInfo, BlobStoreError, PresignedUpload

logger = logging.getLogger(__name__)

LOCAL_BUCKET = "local"
#: The local server's upload route (see ``http/local_uploads.py``).
LOCAL_UPLOAD_ROUTE = "/v1/local-uploads/"
#: ... and its signed download route (a converter's ``download_url``).
LOCAL_DOWNLOAD_ROUTE = "/v1/local-downloads/"
#: The file under ``$MEMORY_ENGINE_HOME`` holding the upload-token HMAC secret.
UPLOAD_SECRET_FILE = "upload-token.key"
_META_DIR = ".meta"
#: OS errors that mean "no such object can exist under this name" (e.g. a segment over NAME_MAX).
_IMPOSSIBLE_NAME = (errno.ENAMETOOLONG, errno.EINVAL, errno.EILSEQ)


class LocalBlobStore:
    def __init__(self, root: Path, bucket: str = LOCAL_BUCKET, *, secret_file: Path | None = None) -> None:
        self.root = root
        self.bucket = bucket
        self.secret_file = secret_file or root.parent / UPLOAD_SECRET_FILE
        self._secret: bytes | None = None

    def _upload_secret(self) -> bytes:
        if self._secret is None:
            try:
                self._secret = read_or_create_secret(self.secret_file)
            except OSError as exc:
                logger.error("cannot read or create the upload-token secret %s: %s", self.secret_file, exc)
                raise BlobStoreError("upload URLs are unavailable: the upload-token secret cannot be read") from exc
        return self._secret

    def _path(self, key: str, *, meta: bool = False) -> Path:
        parts = [p for p in key.split("/") if p]
        if not parts or any(p in (".", "..") for p in parts) or parts[0] == _META_DIR:
            raise InvalidInput(f"invalid object key {key!r}")
        base = self.root / _META_DIR if meta else self.root
        path = base.joinpath(*parts)
        return path.with_name(path.name + ".json") if meta else path

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError as exc:
            raise NotFound(f"object {key} not found") from exc
        except OSError as exc:
            if exc.errno in _IMPOSSIBLE_NAME:
                raise NotFound(f"object {key} not found") from exc
            raise self._failure("reading", key, exc) from exc

    def put(self, key: str, data: bytes, *, content_type: str | None = None,
            metadata: dict[str, str] | None = None) -> None:
        self._atomic_write(self._path(key, meta=True),
                           json.dumps({"content_type": content_type, "metadata": metadata or {}}).encode(), key)
        self._atomic_write(self._path(key), data, key)

    def put_file(self, key: str, source: Path, *, content_type: str | None = None) -> None:
        """Copy a file in (streamed; the source may be large)."""
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        except OSError as exc:
            raise self._failure("writing", key, exc) from exc
        try:
            with os.fdopen(fd, "wb") as out, source.open("rb") as src:
                shutil.copyfileobj(src, out, 1024 * 1024)
            os.replace(tmp, target)
        except FileNotFoundError:
            Path(tmp).unlink(missing_ok=True)
            raise  # the source vanished: the caller decides
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise self._failure("writing", key, exc) from exc
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._atomic_write(self._path(key, meta=True), json.dumps({"content_type": content_type, "metadata": {}}).encode(),
                           key)

    def _atomic_write(self, target: Path, data: bytes, key: str | None = None) -> None:
        try:
            atomic_write(target, data)
        except OSError as exc:
            raise self._failure("writing", key or target.name, exc) from exc

    @staticmethod
    def _failure(action: str, key: str, exc: OSError) -> BlobStoreError:
        """The error a client may see: the key and the reason, never this machine's paths."""
        logger.warning("blob store %s %s failed: %s", action, key, exc)
        reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
        return BlobStoreError(f"{action} object {key} failed: {reason}")

    def head(self, key: str) -> BlobInfo | None:
        path = self._path(key)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in _IMPOSSIBLE_NAME:
                return None
            raise self._failure("reading", key, exc) from exc
        try:
            meta = json.loads(self._path(key, meta=True).read_text())
        except (OSError, ValueError):
            meta = {}
        return BlobInfo(key=key, size=size, content_type=meta.get("content_type"), metadata=meta.get("metadata") or {})

    def delete(self, key: str) -> None:
        for path in (self._path(key), self._path(key, meta=True)):
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                if exc.errno not in _IMPOSSIBLE_NAME:  # a name that cannot exist is already deleted
                    raise self._failure("deleting", key, exc) from exc

    def delete_prefix(self, prefix: str) -> int:
        deleted = 0
        # walk only the prefix's own directory (a walk of the whole store after every document made
        # local ingestion quadratic in the number of documents, bench/peers.py)
        folder = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        for base in (self.root, self.root / _META_DIR):
            start = base / folder
            if not start.is_dir():
                continue
            for path in sorted(start.rglob("*")):
                rel = path.relative_to(base).as_posix()
                if path.is_file() and rel.startswith(prefix) and not rel.startswith(_META_DIR + "/"):
                    path.unlink(missing_ok=True)
                    deleted += base is self.root
        return deleted

    def presign_put(self, key: str, *, content_type: str, expires_in: int = 3600) -> PresignedUpload:
        """A path on the local server (made absolute by the HTTP layer) with a signed token that
        alone authorizes one PUT of ``key`` until ``expires_at`` (like an S3 presigned URL: no API
        key needed, none returned). ``key`` is ``projects/<project_id>/<path>``."""
        project_id = key.removeprefix("projects/").split("/", 1)[0]
        expires_at = (datetime.now(UTC) + timedelta(seconds=expires_in)).replace(microsecond=0)
        token = sign_upload_token(self._upload_secret(), key=key, project_id=project_id, expires_at=expires_at)
        return PresignedUpload(url=LOCAL_UPLOAD_ROUTE + token, method="PUT", headers={"Content-Type": content_type},
                               key=key, expires_at=expires_at)

    def presign_get(self, key: str, *, expires_in: int = 3600) -> str:
        """A path on the local server with a signed token that alone authorizes GET of ``key``
        (``projects/<project_id>/<path>``) until it expires: the stand-in for an S3 presigned GET."""
        project_id = key.removeprefix("projects/").split("/", 1)[0]
        expires_at = (datetime.now(UTC) + timedelta(seconds=expires_in)).replace(microsecond=0)
        token = sign_upload_token(self._upload_secret(), key=key, project_id=project_id, expires_at=expires_at,
                                  purpose=DOWNLOAD_PURPOSE)
        return LOCAL_DOWNLOAD_ROUTE + token

    def verify_download(self, token: str, *, now: datetime | None = None) -> UploadGrant:
        """The grant of a token made by :meth:`presign_get`. Raises ``InvalidUploadToken``."""
        return verify_upload_token(self._upload_secret(), token, now=now or datetime.now(UTC), purpose=DOWNLOAD_PURPOSE)

    def verify_upload(self, token: str, *, now: datetime | None = None) -> UploadGrant:
        """The grant of a token made by :meth:`presign_put`. Raises
        :class:`memory_engine.domain.upload_tokens.InvalidUploadToken` when it is forged, malformed
        or expired."""
        return verify_upload_token(self._upload_secret(), token, now=now or datetime.now(UTC))
