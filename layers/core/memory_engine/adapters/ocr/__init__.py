"""The built-in ``ocr`` converter: Amazon Textract on AWS, Tesseract locally."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory_engine.ports.ocr import OcrEngine
from memory_engine.settings import OcrProvider, Runtime, Settings


def build_ocr_engine(settings: Settings, boto_client: Callable[[str], Any]) -> OcrEngine | None:
    """The OCR engine ``OCR_ENGINE`` names; ``auto``: Textract on AWS, Tesseract when its binary is
    installed, else None (an ``ocr`` rule then fails the document, naming the package to install)."""
    from memory_engine.adapters.ocr.tesseract import TesseractOcr

    provider = settings.ocr_engine
    if provider is OcrProvider.AUTO:
        if settings.runtime is Runtime.AWS:
            provider = OcrProvider.TEXTRACT
        else:
            provider = OcrProvider.TESSERACT if TesseractOcr.available() else OcrProvider.NONE
    if provider is OcrProvider.TEXTRACT:
        from memory_engine.adapters.ocr.textract import TextractOcr

        if not settings.documents_bucket:
            from memory_engine.errors import ConfigurationError

            raise ConfigurationError("OCR_ENGINE=textract needs DOCUMENTS_BUCKET (Textract reads multi-page files from S3)")
        return TextractOcr(boto_client("textract"), boto_client("s3"), settings.documents_bucket)
    if provider is OcrProvider.TESSERACT:
        return TesseractOcr(languages=settings.ocr_languages)
    return None
