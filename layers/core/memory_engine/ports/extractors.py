"""Extraction ports: native extractors (bytes -> pages) and HTTP converters (ingestion rules); OCR is
:mod:`memory_engine.ports.ocr`."""

from __future__ import annotations

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

