"""Native extractors (PDFium, text, the structured formats of docs/ingestion.md "Formats") and the
HTTP converter used by ingestion rules."""

from __future__ import annotations

from memory_engine.ports.extractors import Extractor


def native_extractors() -> dict[str, Extractor]:
    """content type -> extractor, for the types the engine reads itself (``content_types.NATIVE``)."""
    from memory_engine.adapters.extractors.docx import DocxExtractor
    from memory_engine.adapters.extractors.epub import EpubExtractor
    from memory_engine.adapters.extractors.html_page import HtmlExtractor
    from memory_engine.adapters.extractors.mail import EmailExtractor
    from memory_engine.adapters.extractors.odt import OdtExtractor
    from memory_engine.adapters.extractors.pdf import PdfiumExtractor
    from memory_engine.adapters.extractors.pptx import PptxExtractor
    from memory_engine.adapters.extractors.structured import CsvExtractor, JsonExtractor
    from memory_engine.adapters.extractors.text import TextExtractor
    from memory_engine.adapters.extractors.xlsx import XlsxExtractor
    from memory_engine.domain import content_types as ct

    text = TextExtractor()
    return {ct.PDF: PdfiumExtractor(), ct.TEXT: text, ct.MARKDOWN: text, ct.HTML: HtmlExtractor(),
            ct.CSV: CsvExtractor(), ct.JSON: JsonExtractor(), ct.EML: EmailExtractor(), ct.EPUB: EpubExtractor(),
            ct.DOCX: DocxExtractor(), ct.PPTX: PptxExtractor(), ct.XLSX: XlsxExtractor(), ct.ODT: OdtExtractor()}
