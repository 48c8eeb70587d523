"""PDFium page rendering and text (the right-to-left fallback), Tesseract's missing-binary error, and
which OCR engine the composition root builds."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from memory_engine.adapters import pdfium
from memory_engine.adapters.extractors.pdf import PdfiumExtractor
from memory_engine.adapters.ocr.tesseract import TesseractOcr
from memory_engine.adapters.ocr.textract import TextractOcr
from memory_engine.bootstrap import Container
from memory_engine.domain.ingestion_errors import ConverterFailed, EncryptedPdf, NoTextLayer
from memory_engine.errors import ConfigurationError
from memory_engine.settings import Settings
from tests.conftest import shared_data
from tests.support.scans import scanned_pdf


def _pdf(name: str) -> bytes:
    return Path(shared_data("pdfs", name)).read_bytes()


def test_a_scanned_page_renders_to_a_grey_png_of_the_page() -> None:
    # Given a one-page scan stored with the CCITT fax codec
    document = pdfium.open_pdf(scanned_pdf("Harbour chart"), name="scan.pdf")
    try:
        # When its page is rendered for OCR
        image = Image.open(io.BytesIO(pdfium.page_png(document, 0)))
    finally:
        pdfium.close(document)
    # Then it is an 8-bit grey PNG at about 300 dpi with dark text on white
    assert image.format == "PNG" and image.mode == "L"
    assert image.width > 2000
    histogram = image.histogram()
    assert histogram[255] > sum(histogram) / 2 and sum(histogram[:128]) > 1000


def test_gray_png_keeps_every_pixel_and_ignores_the_row_padding() -> None:
    pixels = bytes([0, 50, 100, 9, 9, 150, 200, 250, 9, 9])  # 2 rows of 3 pixels, stride 5
    image = Image.open(io.BytesIO(pdfium.gray_png(pixels, 3, 2, 5)))
    assert image.size == (3, 2) and image.tobytes() == bytes([0, 50, 100, 150, 200, 250])


def test_right_to_left_pages_come_in_logical_order() -> None:
    # PDFium returns Arabic in visual order ("يبيبَح"); the page is read again with pypdf
    pages = list(PdfiumExtractor().pages(_pdf("habibi-arabic.pdf"), name="habibi.pdf"))
    assert "حَبيبي" in pages[0].text and "habibi" in pages[0].text


def test_an_encrypted_pdf_fails_before_the_first_page_and_a_scan_after_the_last() -> None:
    with pytest.raises(EncryptedPdf, match="password"):
        PdfiumExtractor().pages(_pdf("libreoffice-writer-password.pdf"), name="secret.pdf")
    pages = PdfiumExtractor().pages(_pdf("c02-22-scanned.pdf"), name="scan.pdf")
    with pytest.raises(NoTextLayer, match="no text layer"):
        list(pages)


def test_a_missing_tesseract_binary_names_the_package_to_install() -> None:
    ocr = TesseractOcr(binary="tesseract-not-installed-here")
    with pytest.raises(ConverterFailed, match=r"apt-get install tesseract-ocr"):
        list(ocr.pages(b"\x89PNG\r\n\x1a\n", "image/png", "/scans/a.png"))


class _Recording:
    """An AWS session whose clients are recorded instead of built."""

    def __init__(self) -> None:
        self.clients: list[str] = []

    def client(self, service: str) -> object:
        self.clients.append(service)
        return object()


def _ocr(**env: Any) -> tuple[object, list[str]]:
    aws = _Recording()
    engine = Container(Settings(**env), aws=aws).ocr_engine
    return engine, aws.clients


def test_the_composition_root_builds_textract_on_aws_and_nothing_when_told_none() -> None:
    engine, clients = _ocr(MEMORY_ENGINE_RUNTIME="aws", DOCUMENTS_BUCKET="docs")
    assert isinstance(engine, TextractOcr) and clients == ["textract", "s3"]
    assert _ocr(OCR_ENGINE="none")[0] is None
    assert isinstance(_ocr(OCR_ENGINE="tesseract", OCR_LANGUAGES="deu+eng")[0], TesseractOcr)
    with pytest.raises(ConfigurationError, match="DOCUMENTS_BUCKET"):
        _ocr(OCR_ENGINE="textract")
