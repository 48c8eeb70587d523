"""The converter protocol's pure parts: answers -> pages (or pending), size and shape limits, signed
callback tokens, content-type globs and converter URLs of ingestion rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from memory_engine.domain.converter_protocol import (
    MAX_ANSWER_BYTES,
    CallbackUrls,
    InvalidCallbackToken,
    Pending,
    parse_answer,
    parse_answer_bytes,
    sign_callback_token,
    verify_callback_token,
)
from memory_engine.domain.documents import MAX_PAGES, ChunkSettings, ChunkStrategy
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.domain.ingestion_rules import IngestionRuleFields, content_type_glob

SECRET = b"k" * 32
SOURCE = "the converter at http://c"


def test_answers_in_every_accepted_shape_become_pages() -> None:
    pages = parse_answer({"pages": [{"page": 3, "text": "three"}, {"text": "no number"}, "plain"]}, source=SOURCE)
    assert isinstance(pages, list)
    assert [(p.number, p.text) for p in pages] == [(3, "three"), (2, "no number"), (3, "plain")]
    text = parse_answer({"text": "all of it"}, source=SOURCE)
    assert isinstance(text, list) and text[0].number is None
    assert isinstance(parse_answer({"status": "pending"}, source=SOURCE), Pending)


@pytest.mark.parametrize(("body", "message"), [
    ([1, 2], "answered neither"),
    ({"pages": "text"}, "answered neither"),
    ({"pages": [{"page": 1}]}, "page 1 of the answer"),
    ({"error": "cannot read it"}, "reported an error: cannot read it"),
    ({"pages": [""] * (MAX_PAGES + 1)}, f"the limit is {MAX_PAGES}"),
])
def test_bad_answers_are_converter_failures_naming_the_source(body: object, message: str) -> None:
    with pytest.raises(ConverterFailed) as info:
        parse_answer(body, source=SOURCE)
    assert message in info.value.message and SOURCE in info.value.message


def test_raw_answers_must_be_json_and_within_the_size_cap() -> None:
    with pytest.raises(ConverterFailed, match="did not answer JSON"):
        parse_answer_bytes(b"<html>", source=SOURCE)
    with pytest.raises(ConverterFailed, match="larger than 16 MB"):
        parse_answer_bytes(b" " * (MAX_ANSWER_BYTES + 1), source=SOURCE)
    assert parse_answer_bytes(json.dumps({"text": "ok"}).encode(), source=SOURCE)


def test_callback_tokens_grant_one_generation_until_they_expire() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    token = sign_callback_token(SECRET, project_id="p", document_id="d", generation=3,
                                expires_at=now + timedelta(minutes=5))
    grant = verify_callback_token(SECRET, token, now=now)
    assert (grant.project_id, grant.document_id, grant.generation) == ("p", "d", 3)
    with pytest.raises(InvalidCallbackToken) as expired:
        verify_callback_token(SECRET, token, now=now + timedelta(minutes=5))
    assert expired.value.expired
    payload, signature = token.split(".")
    for forged in (f"{payload}.{signature[:-2]}AA", f"{payload[:-2]}AA.{signature}", "x", "a.b.c", "é.é"):
        with pytest.raises(InvalidCallbackToken):
            verify_callback_token(SECRET, forged, now=now)
    with pytest.raises(InvalidCallbackToken):
        verify_callback_token(b"another key" * 3, token, now=now)


def test_callback_urls_point_at_the_public_origin_and_read_the_secret_lazily() -> None:
    reads: list[int] = []

    def secret() -> bytes:
        reads.append(1)
        return SECRET

    urls = CallbackUrls(secret, "https://api.example.com/", 60)
    assert reads == []
    url, expires_at = urls.url(project_id="p", document_id="d", generation=1)
    assert url.startswith("https://api.example.com/v1/converter-callbacks/") and reads == [1]
    assert urls.verify(url.rsplit("/", 1)[1]).document_id == "d"
    assert timedelta(seconds=55) < expires_at - datetime.now(UTC) <= timedelta(seconds=60)


@pytest.mark.parametrize("glob", ["application/pdf", "image/*", "*/*", "*", "application/vnd.ms-excel", "audio/x-?av"])
def test_content_type_globs_that_are_accepted(glob: str) -> None:
    assert content_type_glob(glob.upper()) == glob


@pytest.mark.parametrize("glob", ["pdf", "image/", "/png", "image/png; q=1", "image/[pn]g", "a b/c", ""])
def test_content_type_globs_that_are_refused(glob: str) -> None:
    with pytest.raises(ValueError, match="not a content-type glob"):
        content_type_glob(glob)


def test_rule_chunk_fields_fill_in_over_the_entry_points_default() -> None:
    rule = IngestionRuleFields.model_validate({"content_type_glob": "text/*", "converter": {"type": "ocr"},
                                               "chunk_size": 400})
    assert rule.has_chunk_settings()
    assert rule.chunk_settings(ChunkSettings(strategy=ChunkStrategy.PAGE)) == ChunkSettings(
        strategy=ChunkStrategy.PAGE, size=400, overlap=80)
    with pytest.raises(ValidationError):
        IngestionRuleFields.model_validate({"content_type_glob": "text/*", "converter": {"type": "ocr", "url": "x"}})
