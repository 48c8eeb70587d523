"""Extraction ports: native extractors (bytes -> pages) and HTTP converters (ingestion rules); OCR is
:mod:`memory_engine.ports.ocr`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

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
    """Sends a file to a user-run conversion service (OCR, transcription...) that answers pages
    of text. Raises ``ConverterFailed`` with what the service said."""

    def convert(self, url: str, data: bytes, *, content_type: str, name: str) -> list[Page]: ...

