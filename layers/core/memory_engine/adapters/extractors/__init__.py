"""Native extractors (PDFium, text) and the HTTP converter used by ingestion rules."""

from __future__ import annotations

from memory_engine.ports.extractors import Extractor


def native_extractors() -> dict[str, Extractor]:
    """content type -> extractor, for the types the engine reads itself."""
    from memory_engine.adapters.extractors.pdf import PdfiumExtractor
    from memory_engine.adapters.extractors.text import TextExtractor
    from memory_engine.domain import content_types as ct

    text = TextExtractor()
    return {ct.PDF: PdfiumExtractor(), ct.TEXT: text, ct.MARKDOWN: text}
