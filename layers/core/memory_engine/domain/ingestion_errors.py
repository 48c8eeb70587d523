"""Named ingestion failures. The class name is the error name Step Functions matches
(``errorType`` of the Lambda error), so these names are part of the pipeline contract
(:data:`memory_engine.domain.pipeline.CONTENT_ERRORS`). Each message says what is wrong and
what to do; it is stored verbatim as the document's ``error``."""

from __future__ import annotations

from memory_engine.errors import MemoryEngineError


class IngestionFailure(MemoryEngineError):
    """A document that cannot be ingested as it is. Never retried."""

    status, code = 422, "ingestion_failed"


class DocumentUnreadable(IngestionFailure):
    code = "document_unreadable"


class EncryptedPdf(IngestionFailure):
    code = "encrypted_pdf"


class NoTextLayer(IngestionFailure):
    code = "no_text_layer"


class TooLarge(IngestionFailure):
    code = "too_large"


class UnsupportedContentType(IngestionFailure):
    code = "unsupported_content_type"


class ConverterFailed(IngestionFailure):
    code = "converter_failed"


class InvalidObjectKey(IngestionFailure):
    code = "invalid_object_key"


class DocumentGone(IngestionFailure):
    """The object or the document row disappeared while the pipeline ran."""

    code = "document_gone"
