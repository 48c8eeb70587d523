"""Extraction ports: native extractors (bytes -> pages) and HTTP converters (ingestion rules); OCR is
:mod:`memory_engine.ports.ocr`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from memory_engine.domain.documents import Page
from memory_engine.ports.ocr import OcrEngine


@dataclass
class DocumentInfo:
    """What an extractor learnt besides the pages: the title, properties (e-mail headers, the
    declared type...) and notes on what was bounded. Complete once the pages are consumed."""

    title: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_metadata(self) -> dict[str, Any]:
        found: dict[str, Any] = dict(self.properties)
        if self.title:
            found["title"] = self.title
        if self.notes:
            found["notes"] = list(self.notes)
        return found


class Extracted(Iterator[Page]):
    """Pages as they are produced, with the :class:`DocumentInfo` the extractor fills in."""

    def __init__(self, pages: Iterator[Page], info: DocumentInfo) -> None:
        self._pages, self.info = pages, info

    def __next__(self) -> Page:
        return next(self._pages)


class Extractor(Protocol):
    """Turns a file into pages of text, lazily: the pages come one at a time as they are parsed, so
    the pipeline embeds the first ones while later ones are read.

    ``pages`` checks the file before returning and raises the named failures of
    :mod:`memory_engine.domain.ingestion_errors` (``DocumentUnreadable``, ``EncryptedPdf``,
    ``TooLarge``); the iterator raises ``NoTextLayer`` after the last page when no page had text.
    ``ocr`` reads the pages that have no text layer (scanned pages of a PDF); formats without
    images ignore it. An extractor that learns more than the pages (a title, e-mail headers,
    notes on what it bounded) returns :class:`Extracted`, whose ``info`` is complete once the
    pages are consumed."""

    def pages(self, data: bytes, *, name: str, ocr: OcrEngine | None = None) -> Iterator[Page]: ...


class Converter(Protocol):
    """Speaks the converter protocol (:mod:`memory_engine.domain.converter_protocol`) to a user-run
    service (OCR, transcription...): POSTs ``payload`` as JSON and returns the raw answer body,
    at most ``MAX_ANSWER_BYTES + 1`` bytes of it. Raises ``ConverterFailed`` saying what happened
    (HTTP error status, unreachable, timed out after ``timeout_s``)."""

    def send(self, url: str, payload: dict[str, Any], *, headers: dict[str, str], timeout_s: float) -> bytes: ...
