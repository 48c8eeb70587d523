"""Which content type a file is ingested as: what the upload declared (or the upload URL's request,
or the extension) checked against the bytes (:func:`memory_engine.domain.sniffing.detect`). Every
way in reaches it through Register's S3 event: the drop folder, upload URLs, objects written to the
bucket directly. A mismatch is resolved by the bytes and recorded on the document
(``metadata.extracted.content_type_declared``)."""

from __future__ import annotations

from memory_engine.domain import content_types as ct
from memory_engine.domain.documents import Document
from memory_engine.domain.sniffing import Detection, canonical, detect
from memory_engine.ports.documents import DocumentRepository


def content_type_for(path: str, declared: str | None, existing: Document | None, data: bytes | None) -> Detection:
    """The object's declared type; when generic, the row's (declared with the upload URL), then the
    extension's; then checked against ``data`` (None: too large to read, the declaration stands)."""
    value = canonical(declared)
    if not value or value in ct.GENERIC:
        value = canonical(existing.content_type) if existing is not None and existing.content_type else ""
    if data is None:
        return Detection(value or ct.resolve(path, None))
    return detect(path, value or None, data)


def record_detection(documents: DocumentRepository, doc: Document, detection: Detection) -> None:
    """A new run's ``metadata.extracted``: the declared type when the bytes said otherwise (what a
    previous run recorded is dropped)."""
    found = {"content_type_declared": detection.declared} if detection.declared else {}
    documents.record_extraction(doc.project_id, doc.id, doc.ingest_generation, found, reset=True)
