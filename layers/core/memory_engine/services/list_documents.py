"""Listing a project's documents (``GET /v1/documents``)."""

from __future__ import annotations

from collections.abc import Sequence

from memory_engine.domain.cursor import DEFAULT_LIMIT, check_limit
from memory_engine.domain.documents import Document, DocumentStatus
from memory_engine.domain.globs import tag_filter
from memory_engine.errors import InvalidInput
from memory_engine.ports.documents import DocumentRepository


def list_documents(
    documents: DocumentRepository, project_id: str, *, path_prefix: str | None = None,
    tags: str | Sequence[str] | None = None, status: str | None = None, limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
) -> tuple[list[Document], str | None]:
    """Newest first; ``path_prefix`` matches the start of the path, ``tags`` are globs (ORed).
    Raises InvalidInput (422) for an unknown ``status``, a ``limit`` outside 1..100, bad tag
    patterns or a cursor this API did not issue."""
    try:
        wanted = DocumentStatus(status) if status else None
    except ValueError as exc:
        choices = ", ".join(s.value for s in DocumentStatus)
        raise InvalidInput(f"status must be one of {choices}", details=[{"field": "status"}]) from exc
    return documents.list_documents(project_id, path_prefix=path_prefix, tags=tag_filter(tags), status=wanted,
                                    limit=check_limit(limit), cursor=cursor)
