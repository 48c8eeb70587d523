"""text/plain and text/markdown: one page, decoded as UTF-8 (BOM aware), falling back to
cp1252/latin-1 only when the bytes are not UTF-8."""

from __future__ import annotations

from collections.abc import Iterator

from memory_engine.domain.chunking import normalize_text
from memory_engine.domain.documents import Page
from memory_engine.domain.ingestion_errors import DocumentUnreadable
from memory_engine.ports.ocr import OcrEngine


def decode_text(data: bytes, *, name: str) -> str:
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentUnreadable(
            f"{name} looks like a binary file, not text; upload it with its real content type "
            "(or add an ingestion rule with a converter for that type)"
        )
    for encoding in ("utf-8-sig", "utf-16") if data.startswith((b"\xff\xfe", b"\xfe\xff")) else ("utf-8-sig",):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


class TextExtractor:
    def pages(self, data: bytes, *, name: str, ocr: OcrEngine | None = None) -> Iterator[Page]:
        """One page (none for an empty file); ``ocr`` is not used: text has no scanned pages."""
        text = normalize_text(decode_text(data, name=name))
        return iter([Page(number=None, text=text)] if text else [])
