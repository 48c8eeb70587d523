"""TextractOcr against botocore Stubbers: the requests are validated against Textract's and S3's
service models and the responses carry Textract's real shapes (Blocks with BlockType PAGE / LINE /
WORD, Geometry, Relationships, Page; JobStatus; NextToken)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from memory_engine.adapters.ocr.textract import STAGING_PREFIX, TextractOcr
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.errors import DependencyError
from tests.support.scans import blank_pdf

BUCKET = "memory-engine-documents"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _geometry() -> dict[str, Any]:
    return {"BoundingBox": {"Width": 0.5, "Height": 0.04, "Left": 0.1, "Top": 0.1},
            "Polygon": [{"X": 0.1, "Y": 0.1}, {"X": 0.6, "Y": 0.1}, {"X": 0.6, "Y": 0.14}, {"X": 0.1, "Y": 0.14}]}


def _blocks(page: int | None, *lines: str) -> list[dict[str, Any]]:
    """A PAGE block, then a LINE block with its WORD children per line, as Textract answers."""
    extra = {"Page": page} if page is not None else {}
    blocks: list[dict[str, Any]] = []
    line_ids = [f"line-{page}-{i}" for i in range(len(lines))]
    blocks.append({"BlockType": "PAGE", "Geometry": _geometry(), "Id": f"page-{page}",
                   "Relationships": [{"Type": "CHILD", "Ids": line_ids}], **extra})
    for line_id, text in zip(line_ids, lines, strict=True):
        word_ids = [f"{line_id}-w{j}" for j in range(len(text.split()))]
        blocks.append({"BlockType": "LINE", "Confidence": 99.1, "Text": text, "Geometry": _geometry(), "Id": line_id,
                       "Relationships": [{"Type": "CHILD", "Ids": word_ids}], **extra})
        blocks.extend({"BlockType": "WORD", "Confidence": 98.7, "Text": word, "TextType": "PRINTED",
                       "Geometry": _geometry(), "Id": word_id, **extra}
                      for word_id, word in zip(word_ids, text.split(), strict=True))
    return blocks


@pytest.fixture
def clients() -> Iterator[tuple[Stubber, Stubber, TextractOcr]]:
    textract = boto3.client("textract", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(textract) as t, Stubber(s3) as s:
        yield t, s, TextractOcr(textract, s3, BUCKET, poll_s=0.01, sleep=lambda _: None)
        t.assert_no_pending_responses()
        s.assert_no_pending_responses()


def test_an_image_is_read_with_one_synchronous_call(clients: tuple[Stubber, Stubber, TextractOcr]) -> None:
    textract, _, ocr = clients
    # Given Textract answers DetectDocumentText for the PNG's bytes with two lines
    textract.add_response(
        "detect_document_text",
        {"DocumentMetadata": {"Pages": 1}, "Blocks": _blocks(None, "Purple tomatoes ripen", "in late August"),
         "DetectDocumentTextModelVersion": "1.0"},
        {"Document": {"Bytes": PNG}},
    )
    # When the image is read
    pages = list(ocr.pages(PNG, "image/png", "/scans/label.png"))
    # Then it is one page with the lines in order and no word repeated
    assert [(p.number, p.text) for p in pages] == [(1, "Purple tomatoes ripen\nin late August")]


def test_a_multi_page_pdf_is_staged_in_s3_detected_asynchronously_and_read_through_every_next_token(
    clients: tuple[Stubber, Stubber, TextractOcr],
) -> None:
    textract, s3, ocr = clients
    data = blank_pdf(3)
    # Given the PDF is staged under _work/ocr/, the job runs once more than it is polled,
    # and its results come in two pages of results (NextToken)
    s3.add_response("put_object", {"ETag": '"abc"'},
                    {"Bucket": BUCKET, "Key": ANY, "Body": data, "ContentType": "application/pdf"})
    textract.add_response("start_document_text_detection", {"JobId": "job-1"},
                          {"DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": ANY}}})
    textract.add_response("get_document_text_detection", {"JobStatus": "IN_PROGRESS"},
                          {"JobId": "job-1", "MaxResults": 1000})
    textract.add_response(
        "get_document_text_detection",
        {"JobStatus": "SUCCEEDED", "DocumentMetadata": {"Pages": 3}, "NextToken": "token-2",
         "Blocks": _blocks(1, "Chapter one", "The harvest began early."), "DetectDocumentTextModelVersion": "1.0"},
        {"JobId": "job-1", "MaxResults": 1000},
    )
    textract.add_response(
        "get_document_text_detection",
        {"JobStatus": "SUCCEEDED", "DocumentMetadata": {"Pages": 3}, "Blocks": _blocks(3, "Appendix")},
        {"JobId": "job-1", "MaxResults": 1000, "NextToken": "token-2"},
    )
    s3.add_response("delete_object", {}, {"Bucket": BUCKET, "Key": ANY})
    # When it is read
    pages = list(ocr.pages(data, "application/pdf", "/scans/report.pdf"))
    # Then every page is there, numbered as in the file (page 2 had no text), and the staged copy is gone
    assert [(p.number, p.text) for p in pages] == [
        (1, "Chapter one\nThe harvest began early."), (2, ""), (3, "Appendix")]


def test_the_staged_key_is_under_the_work_prefix(clients: tuple[Stubber, Stubber, TextractOcr]) -> None:
    textract, s3, ocr = clients
    data = blank_pdf(2)
    keys: list[str] = []
    s3.add_response("put_object", {}, {"Bucket": BUCKET, "Key": ANY, "Body": data, "ContentType": "application/pdf"})
    textract.add_response("start_document_text_detection", {"JobId": "job-2"},
                          {"DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": ANY}}})
    textract.add_response("get_document_text_detection",
                          {"JobStatus": "FAILED", "StatusMessage": "Request has unsupported document format"},
                          {"JobId": "job-2", "MaxResults": 1000})
    s3.add_response("delete_object", {}, {"Bucket": BUCKET, "Key": ANY})
    s3.client.meta.events.register("provide-client-params.s3.PutObject", lambda params, **_: keys.append(params["Key"]))
    # When Textract's job fails
    with pytest.raises(ConverterFailed, match="unsupported document format"):
        list(ocr.pages(data, "application/pdf", "/scans/odd.pdf"))
    # Then the failure says Textract's reason, and the copy was staged (and deleted) under _work/ocr/
    assert keys and keys[0].startswith(STAGING_PREFIX)


@pytest.mark.parametrize(("code", "error"), [("ProvisionedThroughputExceededException", DependencyError),
                                            ("ThrottlingException", DependencyError),
                                            ("UnsupportedDocumentException", ConverterFailed),
                                            ("BadDocumentException", ConverterFailed)])
def test_throttling_is_retryable_and_a_rejected_document_is_a_content_failure(
    clients: tuple[Stubber, Stubber, TextractOcr], code: str, error: type[Exception],
) -> None:
    textract, _, ocr = clients
    textract.add_client_error("detect_document_text", service_error_code=code, service_message=f"{code} (test)")
    with pytest.raises(error, match=code):
        list(ocr.pages(b"\xff\xd8\xff\xe0" + b"\x00" * 32, "image/jpeg", "/scans/photo.jpg"))


def test_a_type_ocr_cannot_read_is_refused_before_any_call(clients: tuple[Stubber, Stubber, TextractOcr]) -> None:
    _, _, ocr = clients
    with pytest.raises(ConverterFailed, match="audio/mpeg"):
        list(ocr.pages(b"ID3", "audio/mpeg", "/talks/keynote.mp3"))
