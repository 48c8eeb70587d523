"""Ingestion rules: a content-type glob routed to a converter, with optional chunk settings.

A rule applies to a file whose content type matches its ``content_type_glob``; when several
match, the most specific wins (fewest wildcards, then the longest literal part:
:func:`memory_engine.domain.content_types.most_specific`). The rule's converter reads what the
native extractors cannot (or everything, with ``native_extraction: skip``):

* ``{"type": "http", "url", "headers"?, "timeout_s"?}``: your service, spoken to with the
  converter protocol (:mod:`memory_engine.domain.converter_protocol`);
* ``{"type": "ocr"}``: the built-in OCR (Tesseract locally, Amazon Textract on AWS).

Chunk settings precedence (the effective values are persisted on the document): the request's
fields -> the matching rule's -> the entry point's default (``page`` for files, ``whole`` for text).
"""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from enum import Enum
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memory_engine.domain.documents import ChunkSettings, ChunkStrategy
from memory_engine.domain.validation import Float, Int

#: ``type/subtype`` with ``*`` and ``?`` wildcards (or ``*`` alone), lowercase, as content types are compared.
_GLOB_PART = r"[a-z0-9!#$&^_.+\-*?]{1,100}"
_GLOB = re.compile(rf"\*|{_GLOB_PART}/{_GLOB_PART}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")
#: Headers the engine sets itself on a converter request.
_RESERVED_HEADERS = frozenset({"content-type", "content-length", "host", "transfer-encoding", "connection"})
MAX_HEADERS = 20
MAX_HEADER_VALUE_CHARS = 4096
MAX_URL_CHARS = 2048
#: How long the engine waits for a converter's synchronous answer, by default and at most.
DEFAULT_CONVERTER_TIMEOUT_S = 60.0
#: below the Extract function's 5-minute Lambda timeout (and the Express machine's 5-minute limit)
MAX_CONVERTER_TIMEOUT_S = 240.0
MAX_RULES_PER_PROJECT = 100
#: What the API shows instead of a converter header's value (header values are write-only: they carry
#: credentials). A PUT that sends it back for a header keeps the stored value.
MASKED_HEADER_VALUE = "***"


class NativeExtraction(str, Enum):
    FIRST = "first"  # the native extractor first; the converter when it cannot read the file
    SKIP = "skip"  # always the converter


class FileDelivery(str, Enum):
    BASE64 = "base64"  # the bytes inline in the request (`file`)
    DOWNLOAD_URL = "download_url"  # a signed, expiring GET URL (`file` is the URL): for large files


def converter_url(value: str) -> str:
    """An absolute ``http(s)://host[:port]/...`` URL without credentials. Raises ValueError."""
    value = value.strip()
    if len(value) > MAX_URL_CHARS:
        raise ValueError(f"the URL is longer than {MAX_URL_CHARS} characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise ValueError("must not carry credentials; send them in `headers` instead")
    if any(ch.isspace() or ord(ch) < 32 for ch in value):
        raise ValueError("must not contain spaces or control characters")
    try:
        _ = parts.port
    except ValueError as exc:
        raise ValueError(f"has an invalid port: {exc}") from None
    host = parts.hostname
    if host.startswith("[") or ":" in host:
        ipaddress.ip_address(host.strip("[]"))
    return value


class HttpConverter(BaseModel):
    """Your service: the engine POSTs the file and a callback URL, it answers pages (or ``pending``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["http"]
    url: str = Field(max_length=MAX_URL_CHARS)
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: Float = Field(DEFAULT_CONVERTER_TIMEOUT_S, gt=0, le=MAX_CONVERTER_TIMEOUT_S)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return converter_url(value)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_HEADERS:
            raise ValueError(f"at most {MAX_HEADERS} headers")
        for name, header in value.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"header name {name[:100]!r} is not a valid HTTP header name")
            if name.lower() in _RESERVED_HEADERS:
                raise ValueError(f"header {name} is set by the engine")
            if len(header) > MAX_HEADER_VALUE_CHARS or any(ch in header for ch in "\r\n\x00"):
                raise ValueError(f"header {name}: the value must be one line of at most {MAX_HEADER_VALUE_CHARS} characters")
        return value

    def masked(self) -> HttpConverter:
        """This converter as the API shows it: header names, values :data:`MASKED_HEADER_VALUE`."""
        return self.model_copy(update={"headers": dict.fromkeys(self.headers, MASKED_HEADER_VALUE)})

    def origin(self) -> tuple[str, str, int | None]:
        """(scheme, host, port) of the URL: stored header values are only kept for the same origin."""
        parts = urlsplit(self.url)
        return parts.scheme, (parts.hostname or "").lower(), parts.port

    def with_stored_values(self, stored: HttpConverter | None) -> HttpConverter:
        """Header values :data:`MASKED_HEADER_VALUE` replaced by ``stored``'s value of the same header
        (names compared case-insensitively). Raises ValueError when there is none, or when the URL's
        origin changed (credentials are not re-sent to another host unless written again)."""
        masked = [name for name, value in self.headers.items() if value == MASKED_HEADER_VALUE]
        if not masked:
            return self
        known = {name.lower(): value for name, value in (stored.headers if stored else {}).items()}
        if stored is None or stored.origin() != self.origin():
            raise ValueError(f"header {masked[0]}: {MASKED_HEADER_VALUE!r} keeps the stored value only while the "
                             "converter URL keeps its scheme, host and port; send the value again")
        missing = [name for name in masked if name.lower() not in known]
        if missing:
            raise ValueError(f"header {missing[0]}: {MASKED_HEADER_VALUE!r} keeps the stored value, but the rule has "
                             "no such header; send the value")
        headers = {name: known[name.lower()] if value == MASKED_HEADER_VALUE else value
                   for name, value in self.headers.items()}
        return self.model_copy(update={"headers": headers})


class OcrConverter(BaseModel):
    """The built-in OCR: Tesseract locally, Amazon Textract on AWS."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["ocr"]


Converter = Annotated[HttpConverter | OcrConverter, Field(discriminator="type")]


def content_type_glob(value: str) -> str:
    """``"Image/*"`` -> ``"image/*"``. Raises ValueError for anything but ``type/subtype`` globs."""
    glob = value.strip().lower()
    if not _GLOB.fullmatch(glob):
        raise ValueError(
            f"{value[:100]!r} is not a content-type glob: use type/subtype with * or ? wildcards, "
            "e.g. application/pdf, image/*, audio/*, */*"
        )
    return glob


class RuleChunkFields(BaseModel):
    """The rule's chunk settings; each field left out falls back to the entry point's default."""

    chunk_strategy: ChunkStrategy | None = None
    chunk_size: Int | None = Field(None, ge=50, le=100_000)
    chunk_overlap: Int | None = Field(None, ge=0, le=99_999)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> RuleChunkFields:
        if self.chunk_size is not None and self.chunk_overlap is not None and self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})")
        return self

    def has_chunk_settings(self) -> bool:
        return any(v is not None for v in (self.chunk_strategy, self.chunk_size, self.chunk_overlap))

    def chunk_settings(self, base: ChunkSettings) -> ChunkSettings:
        """These fields over ``base`` (an overlap left out follows the size, capped below it)."""
        strategy, size, overlap = overlay_chunk_fields(base, self.chunk_strategy, self.chunk_size, self.chunk_overlap)
        return ChunkSettings(strategy=strategy, size=size, overlap=min(overlap, size - 1))


def overlay_chunk_fields(base: ChunkSettings, strategy: ChunkStrategy | None, size: int | None,
                         overlap: int | None) -> tuple[ChunkStrategy, int, int]:
    """Chunk fields given (request or rule) over ``base``: an overlap not given follows the size (the
    default 200 is a fifth of the default 1000). The caller checks overlap < size."""
    new_size = size if size is not None else base.size
    new_overlap = overlap if overlap is not None else min(base.overlap, new_size // 5)
    return strategy or base.strategy, new_size, new_overlap


class IngestionRuleFields(RuleChunkFields):
    """The body of ``POST /v1/ingestion-rules`` and ``PUT /v1/ingestion-rules/{id}``."""

    model_config = ConfigDict(extra="forbid")

    content_type_glob: str = Field(min_length=1, max_length=201)
    converter: Converter
    native_extraction: NativeExtraction = NativeExtraction.FIRST
    file_delivery: FileDelivery = FileDelivery.BASE64

    @field_validator("content_type_glob")
    @classmethod
    def _glob(cls, value: str) -> str:
        return content_type_glob(value)


class IngestionRule(IngestionRuleFields):
    """A stored rule, as the API returns it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    project_id: str
    created_at: datetime
    updated_at: datetime

    def masked(self) -> IngestionRule:
        """The rule as the API returns it, to every scope: converter header values masked."""
        if not isinstance(self.converter, HttpConverter) or not self.converter.headers:
            return self
        return self.model_copy(update={"converter": self.converter.masked()})
