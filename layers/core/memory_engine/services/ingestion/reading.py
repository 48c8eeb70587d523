"""Reading a file's pages for ingestion: the native extractor, an ingestion rule's converter, or
both (native first, the converter when the native one cannot read the file).

Pages come lazily, one at a time as they are parsed, so the pipeline can chunk and embed the first
ones while later ones are read (``steps.extract_and_chunk``). With an ``ocr`` rule and native
extraction first, a PDF's pages are read natively and each page without a text layer (a scan) is
rendered and read by the OCR engine, page by page.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Protocol

from memory_engine.domain import content_types as ct
from memory_engine.domain.converter_protocol import Pending
from memory_engine.domain.documents import ConversionWait, Document, Page
from memory_engine.domain.ingestion_errors import DocumentUnreadable, EncryptedPdf, NoTextLayer, UnsupportedContentType
from memory_engine.domain.ingestion_rules import IngestionRule, NativeExtraction, OcrConverter
from memory_engine.domain.validation import scrub_text
from memory_engine.ports.documents import DocumentRepository
from memory_engine.ports.extractors import Extracted, Extractor
from memory_engine.services.ingestion.converters import ConversionRequest, ConverterPorts, convert


class ReadingPorts(ConverterPorts, Protocol):
    @property
    def extractors(self) -> dict[str, Extractor]: ...
    @property
    def documents(self) -> DocumentRepository: ...


class ConversionPending(Exception):
    """The converter answered ``pending``: the pages come through its callback."""

    def __init__(self, wait: ConversionWait) -> None:
        super().__init__(wait.converter_url)
        self.wait = wait


def extract_pages(data: bytes, content_type: str, name: str, ports: ReadingPorts,
                  rule: IngestionRule | None, *, document: Document | None = None, generation: int = 1) -> Iterator[Page]:
    """Native extractor first (unless the rule says ``skip``); the rule's converter when the
    native one cannot read the file or the type has no native extractor. The file's own problems
    (and ConversionPending, when the converter will deliver the pages through its callback) raise
    before the first page is returned; NoTextLayer after the last, when no page had text."""
    native = ports.extractors.get(content_type)
    if native is None and ct.is_textual(content_type):
        native = ports.extractors.get(ct.TEXT)
    if rule is not None and (native is None or rule.native_extraction is NativeExtraction.SKIP):
        pages = iter(_convert(data, content_type, name, ports, rule, document, generation))
    elif native is None:
        raise UnsupportedContentType(
            f"{name} has content type {content_type}, which the engine cannot read natively (PDF, text, "
            "markdown, HTML, CSV, JSON, e-mail, EPUB, Word, PowerPoint, Excel, OpenDocument text); "
            f"add an ingestion rule mapping {content_type} to a converter that returns pages of text"
        )
    else:
        # an ocr rule reads the scanned pages of a file the native extractor reads, page by page
        ocr = ports.ocr if rule is not None and isinstance(rule.converter, OcrConverter) else None
        try:
            produced = native.pages(data, name=name, ocr=ocr)
            pages = _with_text(produced, name, content_type)
            first = next(pages)  # the blank pages are held back: this is the first page with text
        except (EncryptedPdf, NoTextLayer, DocumentUnreadable):
            if rule is None:
                raise
            pages = iter(_convert(data, content_type, name, ports, rule, document, generation))
        else:
            return _recorded(itertools.chain([first], pages), produced, ports, document, generation)
    return _with_text(pages, name, content_type)


def _recorded(pages: Iterator[Page], produced: Iterator[Page], ports: ReadingPorts, document: Document | None,
              generation: int) -> Iterator[Page]:
    """``pages``; once they are all read, what the extractor learnt besides them (title, e-mail
    headers, notes on what it bounded) is recorded on the document (``metadata.extracted``)."""
    yield from pages
    if isinstance(produced, Extracted) and document is not None:
        found = produced.info.as_metadata()
        if found or produced.info.title:
            ports.documents.record_extraction(document.project_id, document.id, generation, found,
                                              title=produced.info.title)


def _with_text(pages: Iterator[Page], name: str, content_type: str) -> Iterator[Page]:
    """``pages`` scrubbed (a file's text may hold NUL or broken surrogates: chunks are text), the
    blank pages before the first page with text held back until it comes; NoTextLayer when none does."""
    held: list[Page] | None = []
    for page in pages:
        page = Page(number=page.number, text=scrub_text(page.text))
        if held is None:
            yield page
        elif page.text.strip():
            yield from held
            held = None
            yield page
        else:
            held.append(page)
    if held is not None:
        raise NoTextLayer(f"{name} contains no text; upload a file with text, or add an ingestion rule "
                          f"with a converter (e.g. OCR) for {content_type}")


def _convert(data: bytes, content_type: str, name: str, ports: ReadingPorts, rule: IngestionRule,
             document: Document | None, generation: int) -> list[Page]:
    if document is None:
        raise DocumentUnreadable(f"internal: converting {name} needs its document; re-ingest it")
    result = convert(ConversionRequest(document=document, generation=generation, data=data,
                                       content_type=content_type, rule=rule), ports)
    if isinstance(result, Pending):
        deadline = ports.callback_urls.deadline_seconds if ports.callback_urls else 1
        raise ConversionPending(ConversionWait(converter_url=getattr(rule.converter, "url", rule.converter.type),
                                               deadline_seconds=deadline))
    return result
