"""UploadInbox on the drop folder: the local stand-in for the PUT of a presigned S3 URL.

The token is verified with the local blob store's secret (the store signed it). The body is written
into ``$MEMORY_ENGINE_HOME/drop/<project folder>/<path>`` atomically (staged under the hidden
``drop/.incoming/``, then renamed), where the drop-folder watcher picks it up: the upload then runs
the same pipeline as a dropped file.
"""

from __future__ import annotations

import logging
from pathlib import Path

from memory_engine.adapters.local.blob_store import LocalBlobStore
from memory_engine.adapters.local.files import atomic_write
from memory_engine.domain.upload_tokens import UploadGrant
from memory_engine.errors import Forbidden
from memory_engine.ports.blobs import BlobStoreError

logger = logging.getLogger(__name__)

#: Staging folder under the drop folder; hidden, so the watcher never reads half a file.
STAGING = ".incoming"


class DropFolderInbox:
    def __init__(self, blobs: LocalBlobStore, drop_root: Path) -> None:
        self._blobs = blobs
        self.drop_root = drop_root

    def verify(self, token: str) -> UploadGrant:
        return self._blobs.verify_upload(token)

    def receive(self, folder: str, path: str, data: bytes) -> None:
        project_root = self.drop_root / folder
        target = project_root / path.lstrip("/")
        if project_root.resolve() not in target.resolve().parents:  # e.g. a symlinked folder pointing elsewhere
            raise Forbidden("upload path is outside the project's folder")
        try:
            atomic_write(target, data, staging_dir=self.drop_root / STAGING)
        except OSError as exc:
            logger.warning("writing the upload of %s/%s failed: %s", folder, path, exc)
            raise BlobStoreError(f"storing the upload of {path} failed; try again") from exc
