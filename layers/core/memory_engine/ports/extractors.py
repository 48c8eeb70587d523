"""Extraction ports: native extractors (bytes -> pages) and HTTP converters (ingestion rules); OCR is
:mod:`memory_engine.ports.ocr`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from memory_engine.domain.documents import Page
from memory_engine.ports.ocr import OcrEngine


class Extractor(Protocol):
    """Turns a file into pages of text, lazily: the pages come one at a time as they are parsed, so
    the pipeline embeds the first ones while later ones are read.

    ``pages`` checks the file before returning and raises the named failures of
    :mod:`memory_engine.domain.ingestion_errors` (``DocumentUnreadable``, ``EncryptedPdf``,
    ``TooLarge``); the iterator raises ``NoTextLayer`` after the last page when no page had text.
    ``ocr`` reads the pages that have no text layer (scanned pages of a PDF); formats without
    images ignore it."""

    def pages(self, data: bytes, *, name: str, ocr: OcrEngine | None = None) -> Iterator[Page]: ...


class Converter(Protocol):
    """Speaks the converter protocol (:mod:`memory_engine.domain.converter_protocol`) to a user-run
    service (OCR, transcription...): POSTs ``payload`` as JSON and returns the raw answer body,
    at most ``MAX_ANSWER_BYTES + 1`` bytes of it. Raises ``ConverterFailed`` saying what happened
    (HTTP error status, unreachable, timed out after ``timeout_s``)."""

    def send(self, url: str, payload: dict[str, Any], *, headers: dict[str, str], timeout_s: float) -> bytes: ...
