"""The OCR port: the built-in ``ocr`` converter of ingestion rules (Tesseract locally, Amazon
Textract on AWS)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from memory_engine.domain.documents import Page


class OcrEngine(Protocol):
    """Reads text out of a scanned document or image, page by page."""
    def pages(self, data: bytes, content_type: str, name: str) -> Iterator[Page]: ...
