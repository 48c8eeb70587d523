"""PDF text extraction with pypdf, page by page (1-based page numbers kept)."""

from __future__ import annotations

import io
import logging

from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError

from memory_engine.domain.chunking import normalize_text
from memory_engine.domain.documents import MAX_PAGES, Page
from memory_engine.domain.ingestion_errors import DocumentUnreadable, EncryptedPdf, NoTextLayer, TooLarge

OCR_HINT = (
    "run OCR on it (e.g. `ocrmypdf in.pdf out.pdf`) and upload the result, or add an ingestion rule for "
    "application/pdf whose converter does OCR"
)


class PypdfExtractor:
    def __init__(self, max_pages: int = MAX_PAGES) -> None:
        self.max_pages = max_pages

    def extract(self, data: bytes, *, name: str) -> list[Page]:
        # pypdf logs a warning per font it cannot fully parse; the text is still fine.
        logging.getLogger("pypdf").setLevel(logging.ERROR)
        if not data.lstrip()[:5].startswith(b"%PDF"):
            raise DocumentUnreadable(f"{name} is not a PDF (no %PDF header); check the file or its content type")
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted and not reader.decrypt(""):
                raise EncryptedPdf(
                    f"{name} is encrypted with a password; remove the password (e.g. `qpdf --decrypt "
                    "--password=... in.pdf out.pdf`) and upload it again, or add an ingestion rule with a converter"
                )
            count = len(reader.pages)
        except EncryptedPdf:
            raise
        except FileNotDecryptedError as exc:
            raise EncryptedPdf(f"{name} is encrypted and cannot be opened without its password; "
                               "remove the password and upload it again") from exc
        except Exception as exc:  # pypdf raises many types on broken files
            raise DocumentUnreadable(
                f"{name} is not a readable PDF ({type(exc).__name__}: {exc}); the file may be truncated or "
                "corrupt: upload it again or re-export it from the source application"
            ) from exc
        if count == 0:
            raise DocumentUnreadable(f"{name} has no pages; re-export it from the source application")
        if count > self.max_pages:
            raise TooLarge(f"{name} has {count} pages; the limit is {self.max_pages}: split it into smaller files")
        pages: list[Page] = []
        broken = 0
        for number, page in enumerate(reader.pages, start=1):
            try:
                text = page.extract_text() or ""
            except Exception:  # one broken page must not lose the whole document
                broken += 1
                text = ""
            pages.append(Page(number=number, text=normalize_text(text)))
        if not any(p.text for p in pages):
            if broken == count:
                raise DocumentUnreadable(
                    f"{name}: no page could be parsed; the file may be truncated or corrupt: upload it again"
                )
            raise NoTextLayer(
                f"{name} has {count} page(s) but no text layer (it looks scanned or image-only); {OCR_HINT}"
            )
        return pages
