"""E-mail messages (``.eml``, RFC 5322 / MIME) with the standard library's ``email`` package.

The first page holds the headers a reader sees (Subject, From, To, Cc, Date), then the body: the
``text/plain`` part, or the ``text/html`` one converted like any HTML (:mod:`html_page`) when there is
no plain text. A forwarded message (``message/rfc822``) is read the same way, after the body.
Attachments are listed (file name, type, size) at the end and in the document's properties, not
read: to search an attachment, ingest it as its own file. The headers become the document's
properties (``email``), the subject its title. An mbox ``From `` line before the headers is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from memory_engine.adapters.extractors.html_page import html_blocks
from memory_engine.adapters.extractors.sections import Budget, DocumentInfo, Extracted, Paginator
from memory_engine.domain.documents import Page
from memory_engine.domain.ingestion_errors import DocumentUnreadable
from memory_engine.ports.ocr import OcrEngine

HEADERS = ("Subject", "From", "To", "Cc", "Date")
MAX_PARTS = 500
MAX_NESTING = 5


class EmailExtractor:
    def pages(self, data: bytes, *, name: str, ocr: OcrEngine | None = None) -> Iterator[Page]:
        """The message's headers and text, attachments listed; ``ocr`` is not used."""
        if data.startswith(b"From "):  # an mbox separator line
            data = data.split(b"\n", 1)[1] if b"\n" in data else b""
        try:
            message = BytesParser(policy=policy.default).parsebytes(data)
        except Exception as exc:  # the parser is lenient; anything it still raises means a broken file
            raise DocumentUnreadable(f"{name} is not a readable e-mail message ({exc})") from exc
        if not any(message.get(h) for h in HEADERS):
            raise DocumentUnreadable(f"{name} has none of the headers of an e-mail message ({', '.join(HEADERS)})")
        info = DocumentInfo(title=_header(message, "Subject") or None)
        return Extracted(self._read(message, info), info)

    def _read(self, message: Message, info: DocumentInfo) -> Iterator[Page]:
        budget = Budget(info)
        attachments: list[dict[str, Any]] = []
        info.properties["email"] = _properties(message)
        yield from _message_pages(message, info, budget, attachments, 0)
        if attachments:
            info.properties["email"]["attachments"] = attachments
            out = Paginator(budget=budget)
            out.heading(2, "Attachments (listed, not read)")
            for item in attachments:
                out.block(f"- {item['filename']} ({item['content_type']}, {item['size_bytes']:,} bytes)")
            yield from out.finish()


def _header(message: Message, name: str) -> str:
    try:
        value = message.get(name)
    except Exception:  # a header the policy cannot parse: read it raw
        value = message.get_all(name, [None])[0] if hasattr(message, "get_all") else None
    return " ".join(str(value).split()) if value is not None else ""


def _properties(message: Message) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in ("From", "To", "Cc"):
        value = _header(message, name)
        if value:
            found[name.lower()] = [addr or disp for disp, addr in getaddresses([value])][:50]
    subject = _header(message, "Subject")
    if subject:
        found["subject"] = subject
    date = _header(message, "Date")
    if date:
        try:
            found["date"] = parsedate_to_datetime(date).isoformat()
        except (TypeError, ValueError, IndexError):
            found["date"] = date
    message_id = _header(message, "Message-ID")
    if message_id:
        found["message_id"] = message_id
    return found


def _message_pages(message: Message, info: DocumentInfo, budget: Budget, attachments: list[dict[str, Any]],
                   depth: int) -> Iterator[Page]:
    out = Paginator(budget=budget)
    if depth:
        out.heading(2, "Forwarded message")
    for name in HEADERS:
        value = _header(message, name)
        if value:
            out.block(f"{name}: {value}")
    yield from out.finish()
    body, nested = _walk(message, attachments)
    if body is not None:
        yield from _body_pages(body, info, budget)
    for inner in nested:
        if depth < MAX_NESTING:
            yield from _message_pages(inner, info, budget, attachments, depth + 1)


def _walk(message: Message, attachments: list[dict[str, Any]]) -> tuple[Message | None, list[Message]]:
    """The part that holds the text (plain preferred over HTML), the forwarded messages, and the
    attachments (appended to ``attachments``)."""
    plain: Message | None = None
    html: Message | None = None
    nested: list[Message] = []
    stack = [message]  # depth first, in order, without recursion; a forwarded message is not entered
    count = 0
    while stack:
        part = stack.pop()
        count += 1
        if count > MAX_PARTS:
            break
        kind = part.get_content_type()
        payload = part.get_payload()
        if kind == "message/rfc822" and part is not message:
            nested.extend(p for p in (payload if isinstance(payload, list) else []) if isinstance(p, Message))
            continue
        if part.is_multipart():
            stack.extend(reversed([p for p in payload if isinstance(p, Message)]) if isinstance(payload, list) else [])
            continue
        disposition = (part.get_content_disposition() or "").lower()
        if disposition != "attachment" and kind == "text/plain" and plain is None:
            plain = part
        elif disposition != "attachment" and kind == "text/html" and html is None:
            html = part
        elif part is not message:
            raw = part.get_payload(decode=True)
            attachments.append({"filename": part.get_filename() or "(unnamed)", "content_type": kind,
                                "size_bytes": len(raw) if isinstance(raw, bytes) else 0})
    return (plain if plain is not None and _text(plain).strip() else html or plain), nested


def _text(part: Message) -> str:
    if isinstance(part, EmailMessage):
        try:
            content = part.get_content()
            if isinstance(content, str):
                return content
        except (LookupError, UnicodeError, ValueError, AssertionError):
            pass
    raw = part.get_payload(decode=True)
    if not isinstance(raw, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return raw.decode(charset, "replace")
    except LookupError:
        return raw.decode("latin-1")


def _body_pages(part: Message, info: DocumentInfo, budget: Budget) -> Iterator[Page]:
    text = _text(part)
    if part.get_content_type() == "text/html":
        yield from html_blocks(text, DocumentInfo(), main_content=False, budget=budget, title_heading=False)
        return
    out = Paginator(budget=budget)
    for paragraph in text.replace("\r\n", "\n").split("\n\n"):
        out.block(paragraph)
    yield from out.finish()
