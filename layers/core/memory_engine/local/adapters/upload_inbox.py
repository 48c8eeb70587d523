"""UploadInbox on the drop folder: the local stand-in for the PUT of a presigned S3 URL.

The token is verified with the local blob store's secret (the store signed it). The body is written
into ``$MEMORY_ENGINE_HOME/drop/<project folder>/<path>`` atomically (staged under the hidden
``drop/.incoming/``, then renamed), where the drop-folder watcher picks it up: the upload then runs
the same pipeline as a dropped file. Deleting the document removes that file again (:meth:`discard`),
as deleting it on AWS removes the S3 object: otherwise the watcher would ingest it again at the next
start, as a new document.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from memory_engine.domain.upload_tokens import UploadGrant
from memory_engine.errors import Forbidden
from memory_engine.local.adapters.blob_store import LocalBlobStore
from memory_engine.local.adapters.files import atomic_write
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

    def discard(self, folder: str, path: str, sha256: str | None) -> None:
        project_root = self.drop_root / folder
        target = project_root / path.lstrip("/")
        try:
            if (target.is_symlink() or not target.is_file()
                    or project_root.resolve() not in target.resolve().parents):
                return
            if sha256 is not None and _sha256(target) != sha256:
                return  # changed since it was ingested: a new version, the watcher takes it as one
            target.unlink(missing_ok=True)
        except OSError as exc:
            logger.warning("removing the dropped file of the deleted document %s/%s failed: %s", folder, path, exc)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as src:
        for block in iter(lambda: src.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()
