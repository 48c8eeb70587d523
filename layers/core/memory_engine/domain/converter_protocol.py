"""The converter protocol of ``http`` ingestion rules, and its signed callback URLs.

Request (the engine POSTs JSON to the rule's ``url``)::

    {"document_id", "path", "content_type", "file": "<base64>" | "<download URL>",
     "file_delivery": "base64" | "download_url", "callback_url"}

Answer, synchronously: ``{"pages": [{"page": 1, "text": "..."}, ...]}`` (also accepted:
``{"pages": ["...", ...]}`` and ``{"text": "..."}``). Or ``{"status": "pending"}``: the converter
POSTs the same ``pages`` body (or ``{"error": "..."}``) to ``callback_url`` before it expires.

A callback URL is ``<api>/v1/converter-callbacks/<token>``: the token is ``<payload>.<signature>``
(URL-safe base64), the payload ``{"v": 1, "use": "converter-callback", "p": project, "d": document,
"g": generation, "exp": unix seconds}`` and the signature HMAC-SHA256 over
``"memory-engine/converter-callback/v1." + payload`` with the engine's secret. It grants one thing:
delivering the pages of that document's generation, once, before it expires.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_engine.domain.chunking import normalize_text
from memory_engine.domain.documents import MAX_PAGES, MAX_TEXT_CHARS, Page
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.domain.upload_tokens import _b64, _unb64
from memory_engine.domain.validation import JsonTooDeep, loads_json

#: A converter's answer (synchronous or through the callback) larger than this is refused.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
#: ... and so is one with more text than a text document may have, or more pages than a PDF.
MAX_ANSWER_CHARS = MAX_TEXT_CHARS
PURPOSE = "converter-callback"
_CONTEXT = b"memory-engine/converter-callback/v1."
MAX_TOKEN_CHARS = 2048
CALLBACK_ROUTE_PREFIX = "/v1/converter-callbacks/"


class Pending:
    """A converter's ``{"status": "pending"}``: the pages come later, through the callback URL."""


def parse_answer(body: Any, *, source: str) -> list[Page] | Pending:
    """A converter's JSON answer -> pages, or :class:`Pending`. Raises ConverterFailed naming
    ``source`` (e.g. "the converter at https://...") for anything else, an ``error`` it reports,
    or more than :data:`MAX_ANSWER_CHARS` of text or :data:`MAX_PAGES` pages."""
    if isinstance(body, dict) and body.get("status") == "pending" and "pages" not in body and "text" not in body:
        return Pending()
    if isinstance(body, dict) and isinstance(body.get("error"), str) and "pages" not in body:
        raise ConverterFailed(f"{source} reported an error: {body['error'][:500]}")
    if isinstance(body, dict) and isinstance(body.get("text"), str):
        pages = [Page(number=None, text=normalize_text(body["text"]))]
    else:
        raw = body.get("pages") if isinstance(body, dict) else None
        if not isinstance(raw, list):
            raise ConverterFailed(f"{source} answered neither `pages` (a list), `text` nor "
                                  '{"status": "pending"}; fix the converter (see docs/ingestion.md)')
        if len(raw) > MAX_PAGES:
            raise ConverterFailed(f"{source} answered {len(raw)} pages; the limit is {MAX_PAGES}: split the file")
        pages = []
        for i, item in enumerate(raw, start=1):
            if isinstance(item, str):
                pages.append(Page(number=i, text=normalize_text(item)))
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                number = item.get("page", i)
                valid = isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= 1_000_000
                pages.append(Page(number=number if valid else i, text=normalize_text(item["text"])))
            else:
                raise ConverterFailed(f"page {i} of the answer of {source} is not text; fix the converter")
    chars = sum(len(p.text) for p in pages)
    if chars > MAX_ANSWER_CHARS:
        raise ConverterFailed(f"{source} answered {chars} characters of text; the limit is {MAX_ANSWER_CHARS}: "
                              "split the file")
    return pages


def parse_answer_bytes(raw: bytes, *, source: str) -> list[Page] | Pending:
    """:func:`parse_answer` of a raw body (at most :data:`MAX_ANSWER_BYTES`, JSON)."""
    if len(raw) > MAX_ANSWER_BYTES:
        raise ConverterFailed(f"the answer of {source} is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB; "
                              "answer less text, or split the file")
    try:
        body = loads_json(raw)
    except JsonTooDeep as exc:
        raise ConverterFailed(f"{source} answered JSON that {exc}; fix the converter") from exc
    except ValueError as exc:
        raise ConverterFailed(f"{source} did not answer JSON ({len(raw)} bytes that do not parse); "
                              "fix the converter") from exc
    return parse_answer(body, source=source)


# --- signed callback tokens ---
class InvalidCallbackToken(ValueError):
    """The token is malformed, forged, for another purpose, or expired."""

    def __init__(self, message: str, *, expired: bool = False) -> None:
        super().__init__(message)
        self.expired = expired


@dataclass(frozen=True)
class CallbackGrant:
    project_id: str
    document_id: str
    generation: int
    expires_at: datetime


def _signature(secret: bytes, payload: str) -> str:
    return _b64(hmac.new(secret, _CONTEXT + payload.encode("ascii"), hashlib.sha256).digest())


def sign_callback_token(secret: bytes, *, project_id: str, document_id: str, generation: int,
                        expires_at: datetime) -> str:
    body = {"v": 1, "use": PURPOSE, "p": project_id, "d": document_id, "g": generation,
            "exp": int(expires_at.timestamp())}
    payload = _b64(json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode("ascii"))
    return f"{payload}.{_signature(secret, payload)}"


def verify_callback_token(secret: bytes, token: str, *, now: datetime | None = None) -> CallbackGrant:
    """The grant of a valid token. Raises :class:`InvalidCallbackToken` (``expired`` set when only
    the time is wrong), never anything else."""
    if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1 or not token.isascii():
        raise InvalidCallbackToken("malformed callback token")
    payload, signature = token.split(".")
    if not hmac.compare_digest(_signature(secret, payload), signature):
        raise InvalidCallbackToken("callback token signature does not match")
    try:
        body = json.loads(_unb64(payload))
        grant = CallbackGrant(project_id=str(body["p"]), document_id=str(body["d"]), generation=int(body["g"]),
                              expires_at=datetime.fromtimestamp(int(body["exp"]), UTC))
        use = body.get("use")
    except (ValueError, KeyError, TypeError, OverflowError, OSError) as exc:
        raise InvalidCallbackToken("malformed callback token") from exc
    if use != PURPOSE:
        raise InvalidCallbackToken("not a converter callback token")
    if (now or datetime.now(UTC)) >= grant.expires_at:
        raise InvalidCallbackToken("callback URL expired: the conversion's deadline passed", expired=True)
    return grant


class CallbackUrls:
    """Signs the callback URL of a deferred conversion: ``<base_url>/v1/converter-callbacks/<token>``,
    valid for ``deadline_seconds`` (the time the pipeline waits). ``base_url`` is the API's public
    origin (the HTTP API's endpoint on AWS; the local engine's address locally, set once it listens)."""

    def __init__(self, secret: Callable[[], bytes], base_url: str, deadline_seconds: int) -> None:
        self._secret_source = secret
        self._secret: bytes | None = None
        self.base_url = base_url.rstrip("/")
        self.deadline_seconds = deadline_seconds

    @property
    def secret(self) -> bytes:
        """Read on first use (Secrets Manager on AWS), not when the engine starts."""
        if self._secret is None:
            self._secret = self._secret_source()
        return self._secret

    def url(self, *, project_id: str, document_id: str, generation: int, now: datetime | None = None) -> tuple[str, datetime]:
        """(the callback URL, when it expires)."""
        expires_at = (now or datetime.now(UTC)) + timedelta(seconds=self.deadline_seconds)
        token = sign_callback_token(self.secret, project_id=project_id, document_id=document_id,
                                    generation=generation, expires_at=expires_at)
        return f"{self.base_url}{CALLBACK_ROUTE_PREFIX}{token}", expires_at

    def verify(self, token: str, *, now: datetime | None = None) -> CallbackGrant:
        """Raises :class:`InvalidCallbackToken`."""
        return verify_callback_token(self.secret, token, now=now)
