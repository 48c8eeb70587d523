"""BlobStore on a local folder (``$MEMORY_ENGINE_HOME/blobs``): the S3 bucket stand-in.

Writes go to a temporary file and are renamed into place, so a reader never sees half an
object. Content type and metadata live in a ``<name>.meta.json`` sidecar under ``.meta/``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_engine.adapters.local.files import atomic_write
from memory_engine.errors import InvalidInput, NotFound
from memory_engine.ports.blobs import BlobInfo, BlobStoreError, PresignedUpload

LOCAL_BUCKET = "local"
#: The local server's upload route (see ``http/local_uploads.py``).
LOCAL_UPLOAD_ROUTE = "/v1/local-uploads/"
_META_DIR = ".meta"


def upload_token(key: str) -> str:
    """The one-segment token of a local upload URL: URL-safe base64 of the object key."""
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


class LocalBlobStore:
    def __init__(self, root: Path, bucket: str = LOCAL_BUCKET) -> None:
        self.root = root
        self.bucket = bucket

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
            raise BlobStoreError(f"reading {key} failed: {exc}") from exc

    def put(self, key: str, data: bytes, *, content_type: str | None = None,
            metadata: dict[str, str] | None = None) -> None:
        self._atomic_write(self._path(key, meta=True),
                           json.dumps({"content_type": content_type, "metadata": metadata or {}}).encode())
        self._atomic_write(self._path(key), data)

    def put_file(self, key: str, source: Path, *, content_type: str | None = None) -> None:
        """Copy a file in (streamed; the source may be large)."""
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out, source.open("rb") as src:
                shutil.copyfileobj(src, out, 1024 * 1024)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._atomic_write(self._path(key, meta=True), json.dumps({"content_type": content_type, "metadata": {}}).encode())

    def _atomic_write(self, target: Path, data: bytes) -> None:
        try:
            atomic_write(target, data)
        except OSError as exc:
            raise BlobStoreError(f"writing {target} failed: {exc}") from exc

    def head(self, key: str) -> BlobInfo | None:
        path = self._path(key)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None
        try:
            meta = json.loads(self._path(key, meta=True).read_text())
        except (OSError, ValueError):
            meta = {}
        return BlobInfo(key=key, size=size, content_type=meta.get("content_type"), metadata=meta.get("metadata") or {})

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)
        self._path(key, meta=True).unlink(missing_ok=True)

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
        """A path on the local server (made absolute by the HTTP layer); the PUT needs the caller's key."""
        return PresignedUpload(url=LOCAL_UPLOAD_ROUTE + upload_token(key), method="PUT", headers={"Content-Type": content_type},
                               key=key, expires_at=datetime.now(UTC) + timedelta(seconds=expires_in))
