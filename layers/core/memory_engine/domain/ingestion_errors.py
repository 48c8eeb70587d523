"""Named ingestion failures. The class name is the error name Step Functions matches
(``errorType`` of the Lambda error), so these names are part of the pipeline contract
(:data:`memory_engine.domain.pipeline.CONTENT_ERRORS`). Each message says what is wrong and
what to do; it is stored verbatim as the document's ``error``."""

from __future__ import annotations

from memory_engine.errors import MemoryEngineError


class IngestionFailure(MemoryEngineError, status=422, code="ingestion_failed"):
    """A document that cannot be ingested as it is. Never retried."""


class DocumentUnreadable(IngestionFailure, code="document_unreadable"):
    """The file is damaged or not what its type says, so no text can be read from it."""


class EncryptedPdf(IngestionFailure, code="encrypted_pdf"):
    """A password-protected PDF."""


class NoTextLayer(IngestionFailure, code="no_text_layer"):
    """The file holds no text to index (e.g. a scanned PDF without a text layer)."""


class TooLarge(IngestionFailure, code="too_large"):
    """The file is over ``MAX_DOCUMENT_BYTES``."""


class UnsupportedContentType(IngestionFailure, code="unsupported_content_type"):
    """No extractor reads this content type and no ingestion rule converts it."""


class ConverterFailed(IngestionFailure, code="converter_failed"):
    """An ingestion rule's converter answered something that is not the text of the file."""


class InvalidObjectKey(IngestionFailure, code="invalid_object_key"):
    """The object's key does not name a project and a valid path (``projects/<id>/<path>``)."""


class DocumentGone(IngestionFailure, code="document_gone"):
    """The object or the document row disappeared while the pipeline ran."""
