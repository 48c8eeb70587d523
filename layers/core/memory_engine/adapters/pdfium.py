"""Every call into PDFium (pypdfium2) in one place: opening a PDF with the engine's named errors,
a page's text layer, and a page rendered as a PNG for OCR.

PDFium renders the image codecs of scanned PDFs that pypdf cannot decode (JBIG2, CCITT fax, JPX).
It is not thread-safe: every function here takes :data:`PDFIUM_LOCK`, one page at a time, so other
threads (the embedding model) run between pages.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Iterator

import pypdfium2 as pdfium

from memory_engine.domain.documents import MAX_PAGES
from memory_engine.domain.ingestion_errors import DocumentUnreadable, EncryptedPdf, TooLarge

#: PDFium keeps process-wide state that is not thread-safe: one call into it at a time.
PDFIUM_LOCK = threading.RLock()
#: Scanned pages are rendered at this resolution for OCR (Tesseract reads 300 dpi best).
OCR_DPI = 300
#: Pixels per side beyond which a page is rendered smaller (a poster-size page at 300 dpi would be
#: hundreds of megapixels; Textract takes at most 10,000 pixels a side).
MAX_SIDE_PIXELS = 8000


def open_pdf(data: bytes, *, name: str, max_pages: int = MAX_PAGES) -> pdfium.PdfDocument:
    """The PDFium document, checked: raises DocumentUnreadable (not a PDF, broken, no pages),
    EncryptedPdf (needs a password), TooLarge (over ``max_pages``). Close it with :func:`close`."""
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise DocumentUnreadable(f"{name} is not a PDF (no %PDF header); check the file or its content type")
    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if "password" in str(exc).lower():
                raise EncryptedPdf(
                    f"{name} is encrypted with a password; remove the password (e.g. `qpdf --decrypt "
                    "--password=... in.pdf out.pdf`) and upload it again, or add an ingestion rule with a converter"
                ) from exc
            raise DocumentUnreadable(
                f"{name} is not a readable PDF ({exc}); the file may be truncated or corrupt: upload it again or "
                "re-export it from the source application"
            ) from exc
        count = len(document)
        if count == 0 or count > max_pages:
            document.close()
    if count == 0:
        raise DocumentUnreadable(f"{name} has no pages; re-export it from the source application")
    if count > max_pages:
        raise TooLarge(f"{name} has {count} pages; the limit is {max_pages}: split it into smaller files")
    return document


def close(document: pdfium.PdfDocument) -> None:
    with PDFIUM_LOCK:
        document.close()


def page_text(document: pdfium.PdfDocument, index: int) -> str:
    """The text layer of page ``index`` (0-based), in PDFium's reading order."""
    with PDFIUM_LOCK:
        page = document[index]
        try:
            textpage = page.get_textpage()
            try:
                return str(textpage.get_text_range())
            finally:
                textpage.close()
        finally:
            page.close()


def page_png(document: pdfium.PdfDocument, index: int, dpi: int = OCR_DPI) -> bytes:
    """Page ``index`` (0-based) rendered in 8-bit grey at ``dpi`` as a PNG image."""
    with PDFIUM_LOCK:
        page = document[index]
        try:
            width, height = page.get_size()  # points (1/72 inch)
            scale = min(dpi / 72, MAX_SIDE_PIXELS / max(width, height, 1))
            bitmap = page.render(scale=scale, grayscale=True)
            try:
                return gray_png(bytes(bitmap.buffer), bitmap.width, bitmap.height, bitmap.stride)
            finally:
                bitmap.close()
        finally:
            page.close()


def page_images(data: bytes, *, name: str) -> Iterator[tuple[int, bytes]]:
    """``(page number, PNG)`` for every page of a PDF, rendered one at a time."""
    document = open_pdf(data, name=name)
    try:
        for index in range(len(document)):
            yield index + 1, page_png(document, index)
    finally:
        close(document)


def gray_png(pixels: bytes, width: int, height: int, stride: int) -> bytes:
    """A PNG (8-bit greyscale, no filter) of ``height`` rows of ``stride`` bytes, ``width`` used."""
    rows = b"".join(b"\x00" + pixels[y * stride:y * stride + width] for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit, greyscale, deflate, no filter, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b"")
