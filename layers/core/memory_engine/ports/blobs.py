"""The BlobStore port: the S3 bucket on AWS, a folder under $MEMORY_ENGINE_HOME locally."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from memory_engine.errors import DependencyError


class BlobStoreError(DependencyError):
    """The store failed (retryable)."""

    code = "blob_store_error"


@dataclass(frozen=True)
class BlobInfo:
    key: str
    size: int
    content_type: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    etag: str | None = None


@dataclass(frozen=True)
class PresignedUpload:
    """Where and how to PUT the bytes. ``url`` may be a path (``/v1/...``) for the local store:
    the HTTP layer makes it absolute with the request's origin."""

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
    def head(self, key: str) -> BlobInfo | None: ...
    def delete(self, key: str) -> None: ...
    def delete_prefix(self, prefix: str) -> int: ...
    def presign_put(self, key: str, *, content_type: str, expires_in: int = 3600) -> PresignedUpload: ...
