"""Use case: receive the PUT of an upload URL this server issued (the local stand-in for a
presigned S3 PUT; on AWS the bytes go to S3 and its "Object Created" event starts ingestion).

Like a presigned S3 URL, the URL's signed token alone authorizes the PUT (no API key). It names
one object key ``projects/<project_id>/<path>``; the path passed the document path rule when the
token was made and again when it is verified.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_engine.domain.upload_tokens import InvalidUploadToken
from memory_engine.domain.validation import project_name
from memory_engine.errors import Conflict, Forbidden, NotFound
from memory_engine.ports.blobs import UploadInbox
from memory_engine.ports.projects import ProjectRepository


@dataclass(frozen=True)
class StoredUpload:
    key: str
    path: str
    size: int


def receive_upload(inbox: UploadInbox | None, projects: ProjectRepository, token: str, data: bytes) -> StoredUpload:
    """Store the bytes for ingestion. Raises NotFound (404) without an inbox or for a project that no
    longer exists, Forbidden (403) for a forged, malformed or expired token (as S3 answers) or a path
    outside the project's folder, Conflict (409) for a project whose name is no folder name,
    BlobStoreError (503) when storing fails."""
    if inbox is None:  # uploads go to the presigned S3 URL, never here
        raise NotFound("upload URL not found")
    try:
        grant = inbox.verify(token)
    except InvalidUploadToken as exc:
        raise Forbidden("upload URL is invalid or expired; request a new one from POST /v1/documents/uploads",
                        details={"reason": str(exc)}) from exc
    project = projects.get_project(grant.project_id)
    if project is None or project.id != grant.project_id:
        raise NotFound("upload URL not found")
    try:
        folder = project_name(project.name)
    except ValueError as exc:  # a project named before names were slugs: it has no safe drop folder
        raise Conflict(f"project {project.id} has no valid drop folder name; uploads to it are refused") from exc
    inbox.receive(folder, grant.path, data)
    return StoredUpload(key=grant.key, path=grant.path, size=len(data))
