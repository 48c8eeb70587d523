"""The BlobStore port: the S3 bucket on AWS, a folder under $MEMORY_ENGINE_HOME locally."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from memory_engine.domain.upload_tokens import UploadGrant
from memory_engine.errors import DependencyError


class BlobStoreError(DependencyError, code="blob_store_error"):
    """The store failed (retryable)."""


@dataclass(frozen=True)
class BlobInfo:
    key: str
    size: int
    content_type: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    etag: str | None = None


@dataclass(frozen=True)
class PresignedUpload:
    """Where and how to PUT the bytes. ``url`` may be relative to the server that issued it (the
    local store's ``/v1/local-uploads/...``): resolve it against that server's origin."""

    url: str
    method: str
    headers: dict[str, str]
    key: str
    expires_at: datetime


class BlobStore(Protocol):
    """Objects by key. ``bucket`` names the store (an S3 bucket name; ``"local"`` locally).

    Every method raises :class:`BlobStoreError` when the backend fails; ``get`` raises
    :class:`memory_engine.errors.NotFound` for a missing key (``head`` returns None instead).
    """

    bucket: str

    def get(self, key: str) -> bytes: ...
    def put(self, key: str, data: bytes, *, content_type: str | None = None,
            metadata: dict[str, str] | None = None) -> None: ...
    def put_file(self, key: str, source: Path, *, content_type: str | None = None) -> None:
        """Copy a file in, streamed (it may be large). Raises FileNotFoundError when ``source`` vanished."""
        ...
    def head(self, key: str) -> BlobInfo | None: ...
    def delete(self, key: str) -> None: ...
    def delete_prefix(self, prefix: str) -> int: ...
    def presign_put(self, key: str, *, content_type: str, expires_in: int = 3600) -> PresignedUpload: ...
    def presign_get(self, key: str, *, expires_in: int = 3600) -> str:
        """A URL that alone authorizes one GET of ``key`` until it expires: an S3 presigned GET, or
        locally a signed path on the local server (relative: resolve it against the server's origin)."""
        ...


class UploadInbox(Protocol):
    """Receives the PUT of an upload URL this server issued (the local stand-in for S3's presigned
    PUT; on AWS the bytes go to S3 and there is no inbox)."""

    def verify(self, token: str) -> UploadGrant:
        """The grant of the URL's token. Raises
        :class:`memory_engine.domain.upload_tokens.InvalidUploadToken` (forged, malformed, expired)."""
        ...

    def receive(self, folder: str, path: str, data: bytes) -> None:
        """Store ``data`` as ``path`` of the project whose folder is ``folder``, all or nothing, for
        ingestion to pick up. Raises :class:`memory_engine.errors.Forbidden` when the path leaves the
        project's folder, :class:`BlobStoreError` when storing fails."""
        ...

    def discard(self, folder: str, path: str, sha256: str | None) -> None:
        """Remove what :meth:`receive` stored as ``path`` of the project whose folder is ``folder``
        (the document at that path was deleted, so nothing may ingest it again), when its content is
        still ``sha256`` (``None``: the document never got content, so that file is its upload). A
        file changed since is a new version and stays. Never raises for a file that is gone."""
        ...
