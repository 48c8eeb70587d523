"""Extraction ports: native extractors (bytes -> pages), HTTP converters and OCR (ingestion rules)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memory_engine.domain.documents import Page


class Extractor(Protocol):
    """Turns a file into pages of text. Raises the named failures of
    :mod:`memory_engine.domain.ingestion_errors` (``DocumentUnreadable``, ``EncryptedPdf``,
    ``NoTextLayer``, ``TooLarge``); never returns an empty list for a file with text."""

    def extract(self, data: bytes, *, name: str) -> list[Page]: ...


class Converter(Protocol):
    """Sends a file to a user-run conversion service (OCR, transcription...) that answers pages
    of text. Raises ``ConverterFailed`` with what the service said."""

    def convert(self, url: str, data: bytes, *, content_type: str, name: str) -> list[Page]: ...


class OcrEngine(Protocol):
    """The built-in ``ocr`` converter of ingestion rules: scanned PDFs and images -> pages of text
    (Tesseract locally, Amazon Textract on AWS).

    ``content_type`` is one of ``application/pdf``, ``image/png``, ``image/jpeg``, ``image/tiff``.
    ``pages`` limits a PDF to those 1-based page numbers (the ones whose text layer is empty); None
    reads every page. ``source_key`` is where the bytes are stored in the blob store (Textract reads
    multi-page documents from S3 by key; Tesseract ignores it). The result has one :class:`Page` per
    page read, numbered as in the file. Raises ``ConverterFailed`` with the next step in its message
    when OCR cannot run (e.g. the ``tesseract`` binary is missing: the message names the package to
    install) or the file cannot be read.
    """

    def recognize(self, data: bytes, *, content_type: str, name: str, source_key: str | None = None,
                  pages: Sequence[int] | None = None) -> list[Page]: ...
