"""Extraction ports: native extractors (bytes -> pages) and HTTP converters (ingestion rules); OCR is
:mod:`memory_engine.ports.ocr`."""

from __future__ import annotations

from typing import Any, Protocol

from memory_engine.domain.documents import Page


class Extractor(Protocol):
    """Turns a file into pages of text. Raises the named failures of
    :mod:`memory_engine.domain.ingestion_errors` (``DocumentUnreadable``, ``EncryptedPdf``,
    ``NoTextLayer``, ``TooLarge``); never returns an empty list for a file with text."""

    def extract(self, data: bytes, *, name: str) -> list[Page]: ...


class Converter(Protocol):
    """Speaks the converter protocol (:mod:`memory_engine.domain.converter_protocol`) to a user-run
    service (OCR, transcription...): POSTs ``payload`` as JSON and returns the raw answer body,
    at most ``MAX_ANSWER_BYTES + 1`` bytes of it. Raises ``ConverterFailed`` saying what happened
    (HTTP error status, unreachable, timed out after ``timeout_s``)."""

    def send(self, url: str, payload: dict[str, Any], *, headers: dict[str, str], timeout_s: float) -> bytes: ...
