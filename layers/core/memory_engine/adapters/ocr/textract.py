"""OCR with Amazon Textract's document text detection.

* PNG and JPEG images, and one-page PDFs: ``DetectDocumentText`` (synchronous; the bytes inline up
  to 5 MB, else from S3).
* Multi-page PDFs and TIFFs: ``StartDocumentTextDetection`` on the file in S3 (staged under
  ``_work/ocr/`` of the documents bucket, deleted afterwards), then ``GetDocumentTextDetection``
  polled until the job ends and read page by page through ``NextToken``.

The text of a page is its ``LINE`` blocks in Textract's reading order. Throttling is a
DependencyError (the pipeline retries the step); a document Textract rejects or a failed job is
ConverterFailed with Textract's reason.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import ClientError

from memory_engine import constants as c
from memory_engine.adapters import pdfium
from memory_engine.domain import content_types as ct
from memory_engine.domain.chunking import normalize_text
from memory_engine.domain.documents import Page
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.errors import DependencyError

#: DetectDocumentText takes at most this many bytes inline (larger files are read from S3).
MAX_INLINE_BYTES = 5 * 1024 * 1024
#: Textract answers these when the account's rate is exceeded: retry later.
THROTTLED = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException", "LimitExceededException",
                       "InternalServerError", "ServiceUnavailableException"})
STAGING_PREFIX = f"{c.S3_WORK_PREFIX}ocr/"


class TextractOcr:
    """Takes its boto3 ``textract`` and ``s3`` clients and the documents bucket. ``max_wait_s``
    bounds an asynchronous job: the Extract function times out after 5 minutes."""

    def __init__(self, textract: Any, s3: Any, bucket: str, *, poll_s: float = 2.0, max_wait_s: float = 240.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._textract, self._s3, self.bucket = textract, s3, bucket
        self.poll_s, self.max_wait_s, self._sleep = poll_s, max_wait_s, sleep

    def pages(self, data: bytes, content_type: str, name: str) -> Iterator[Page]:
        """One page of text per page of the PDF or image. Raises ConverterFailed, DependencyError."""
        if content_type not in ct.OCR_TYPES:
            raise ConverterFailed(f"{name} is {content_type}; OCR reads PDFs and PNG, JPEG and TIFF images")
        single = content_type in (ct.PNG, ct.JPEG) or (content_type == ct.PDF and _page_count(data, name) == 1)
        if single and len(data) <= MAX_INLINE_BYTES:
            answer = self._call("DetectDocumentText", name, Document={"Bytes": data})
            yield Page(number=1, text=_lines(answer.get("Blocks", []), 1))
            return
        key = f"{STAGING_PREFIX}{hashlib.sha256(data).hexdigest()}"
        self._stage(key, data, content_type, name)
        try:
            if single:
                answer = self._call("DetectDocumentText", name, Document={"S3Object": {"Bucket": self.bucket, "Name": key}})
                yield Page(number=1, text=_lines(answer.get("Blocks", []), 1))
            else:
                yield from self._detect_async(key, name)
        finally:
            try:
                self._s3.delete_object(Bucket=self.bucket, Key=key)
            except ClientError:
                pass  # the _work/ prefix is cleaned by the bucket's lifecycle rule too

    def _detect_async(self, key: str, name: str) -> Iterator[Page]:
        started = self._call("StartDocumentTextDetection", name,
                             DocumentLocation={"S3Object": {"Bucket": self.bucket, "Name": key}})
        job = started["JobId"]
        waited = 0.0
        while True:
            answer = self._call("GetDocumentTextDetection", name, JobId=job, MaxResults=1000)
            status = answer.get("JobStatus")
            if status in ("SUCCEEDED", "PARTIAL_SUCCESS"):
                break
            if status == "FAILED":
                raise ConverterFailed(f"Textract could not read {name}: {answer.get('StatusMessage') or 'job failed'}")
            if waited >= self.max_wait_s:
                raise ConverterFailed(f"Textract did not finish reading {name} within {self.max_wait_s:.0f} s; "
                                      "split the file into smaller ones")
            self._sleep(self.poll_s)
            waited += self.poll_s
        total = int(answer.get("DocumentMetadata", {}).get("Pages") or 0)
        blocks: dict[int, list[dict[str, Any]]] = {}
        while True:
            for block in answer.get("Blocks", []):
                blocks.setdefault(int(block.get("Page", 1)), []).append(block)
            token = answer.get("NextToken")
            if not token:
                break
            answer = self._call("GetDocumentTextDetection", name, JobId=job, MaxResults=1000, NextToken=token)
        for number in range(1, max(total, max(blocks, default=0)) + 1):
            yield Page(number=number, text=_lines(blocks.get(number, []), number))

    def _stage(self, key: str, data: bytes, content_type: str, name: str) -> None:
        try:
            self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)
        except ClientError as exc:
            raise DependencyError(f"could not stage {name} for Textract in s3://{self.bucket}/{key}: {exc}") from exc

    def _call(self, operation: str, name: str, **params: Any) -> dict[str, Any]:
        method = {"DetectDocumentText": self._textract.detect_document_text,
                  "StartDocumentTextDetection": self._textract.start_document_text_detection,
                  "GetDocumentTextDetection": self._textract.get_document_text_detection}[operation]
        try:
            answer: dict[str, Any] = method(**params)
            return answer
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            message = exc.response.get("Error", {}).get("Message", str(exc))
            if code in THROTTLED:
                raise DependencyError(f"Textract is busy ({code}) reading {name}; retrying") from exc
            raise ConverterFailed(f"Textract could not read {name} ({code}: {message}); check that the file is a "
                                  "valid PDF or PNG, JPEG or TIFF image under Textract's limits") from exc


def _lines(blocks: list[dict[str, Any]], page: int) -> str:
    return normalize_text("\n".join(b.get("Text", "") for b in blocks
                                    if b.get("BlockType") == "LINE" and int(b.get("Page", page)) == page))


def _page_count(data: bytes, name: str) -> int:
    document = pdfium.open_pdf(data, name=name)
    try:
        return len(document)
    finally:
        pdfium.close(document)
