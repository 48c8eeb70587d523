"""Converter dispatch of ingestion rules: a small registry keyed by the converter's ``type``.

* ``http``: the converter protocol (:mod:`memory_engine.domain.converter_protocol`): POST the file
  (inline base64 or a signed download URL) with a signed callback URL; the answer is pages, or
  ``pending`` (the pipeline then waits for the callback, see :mod:`.callbacks`).
* ``ocr``: the built-in OCR engine (``ports.ocr``, an :class:`OcrEngine`), page by page.

Every failure is ``ConverterFailed`` with what happened and what to do; the document ends
``failed`` with that message.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urljoin

from memory_engine.domain.converter_protocol import CallbackUrls, Pending, parse_answer_bytes
from memory_engine.domain.documents import Document, Page
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.domain.ingestion_rules import FileDelivery, HttpConverter, IngestionRule, OcrConverter
from memory_engine.ports.blobs import BlobStore
from memory_engine.ports.conversions import ConversionRepository
from memory_engine.ports.extractors import Converter
from memory_engine.ports.ocr import OcrEngine

OCR_NOT_CONFIGURED = ("OCR is not configured: install tesseract-ocr (apt-get install tesseract-ocr) locally, "
                      "or deploy with Textract")


@dataclass(frozen=True)
class ConversionRequest:
    """One file to convert under ``rule`` (``generation`` is the run's)."""

    document: Document
    generation: int
    data: bytes
    content_type: str
    rule: IngestionRule


class ConverterPorts(Protocol):
    """What the converters use (``steps.IngestionPorts`` has all of it)."""

    @property
    def blobs(self) -> BlobStore: ...
    @property
    def converter(self) -> Converter: ...
    @property
    def ocr(self) -> OcrEngine | None: ...
    @property
    def conversions(self) -> ConversionRepository | None: ...
    @property
    def callback_urls(self) -> CallbackUrls | None: ...


ConversionResult = list[Page] | Pending
ConverterFunction = Callable[[ConversionRequest, ConverterPorts], ConversionResult]


def convert(request: ConversionRequest, ports: ConverterPorts) -> ConversionResult:
    """The pages of the file, or :class:`Pending`. Raises ConverterFailed."""
    handler = CONVERTERS.get(request.rule.converter.type)
    if handler is None:  # a type the rules API accepted but this engine cannot run
        raise ConverterFailed(f"the ingestion rule {request.rule.id} names converter type "
                              f"{request.rule.converter.type!r}, which this engine does not run; fix the rule")
    return handler(request, ports)


def _http(request: ConversionRequest, ports: ConverterPorts) -> ConversionResult:
    spec = request.rule.converter
    assert isinstance(spec, HttpConverter)
    doc = request.document
    if ports.callback_urls is None or ports.conversions is None:
        raise ConverterFailed("converters are not configured in this deployment (no callback URL signer); "
                              "report it to the operator")
    callback_url, expires_at = ports.callback_urls.url(project_id=doc.project_id, document_id=doc.id,
                                                       generation=request.generation)
    if request.rule.file_delivery is FileDelivery.DOWNLOAD_URL:
        if not doc.source_key:
            raise ConverterFailed(f"{doc.path} has no stored object to share with the converter; upload it again")
        link = ports.blobs.presign_get(doc.source_key, expires_in=ports.callback_urls.deadline_seconds)
        file = urljoin(ports.callback_urls.base_url + "/", link)
    else:
        file = base64.b64encode(request.data).decode("ascii")
    payload = {"document_id": doc.id, "path": doc.path, "content_type": request.content_type, "file": file,
               "file_delivery": request.rule.file_delivery.value, "callback_url": callback_url}
    # recorded before the request: a converter may call back before it answers
    ports.conversions.open(doc.project_id, doc.id, request.generation, converter_url=spec.url, expires_at=expires_at)
    raw = ports.converter.send(spec.url, payload, headers=spec.headers, timeout_s=spec.timeout_s)
    return parse_answer_bytes(raw, source=f"the converter at {spec.url}")


def _ocr(request: ConversionRequest, ports: ConverterPorts) -> ConversionResult:
    assert isinstance(request.rule.converter, OcrConverter)
    if ports.ocr is None:
        raise ConverterFailed(OCR_NOT_CONFIGURED)
    return list(ports.ocr.pages(request.data, request.content_type, request.document.path))


#: converter ``type`` -> how to run it
CONVERTERS: dict[str, ConverterFunction] = {"http": _http, "ocr": _ocr}
