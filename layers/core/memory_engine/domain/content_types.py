"""Content types: from the object's metadata or the file extension, checked against the file's
bytes (:mod:`memory_engine.domain.sniffing`); glob matching for ingestion rules (the most specific
glob wins)."""

from __future__ import annotations

import fnmatch
import mimetypes
from collections.abc import Iterable, Sequence
from typing import TypeVar

PDF = "application/pdf"
TEXT = "text/plain"
MARKDOWN = "text/markdown"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
HTML = "text/html"
CSV = "text/csv"
JSON = "application/json"
EML = "message/rfc822"
EPUB = "application/epub+zip"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODT = "application/vnd.oasis.opendocument.text"
ZIP = "application/zip"
#: What the built-in ``ocr`` converter reads (scanned PDFs and images).
OCR_TYPES = frozenset({PDF, PNG, JPEG, TIFF})
#: What the native extractors handle (docs/ingestion.md, "Formats").
NATIVE = frozenset({PDF, TEXT, MARKDOWN, HTML, CSV, JSON, EML, EPUB, DOCX, PPTX, XLSX, ODT})
#: The zip containers read natively (told apart by their manifest, not their extension).
ZIP_FORMATS = frozenset({DOCX, PPTX, XLSX, ODT, EPUB})
#: Values that say "unknown": fall back to the extension.
GENERIC = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/x-www-form-urlencoded"})

_EXTENSIONS = {
    ".pdf": PDF,
    ".txt": TEXT,
    ".text": TEXT,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".mdx": MARKDOWN,
    ".rst": TEXT,
    ".csv": CSV,
    ".json": JSON,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".eml": EML,
    ".epub": EPUB,
    ".docx": DOCX,
    ".pptx": PPTX,
    ".xlsx": XLSX,
    ".odt": ODT,
    ".zip": ZIP,
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
    ".tif": TIFF,
    ".tiff": TIFF,
}


def posted_text_formats() -> frozenset[str]:
    """The types a text posted to ``POST /v1/documents`` can be read as (its ``content_type``, else
    its path's extension when it names one of them, else plain text)."""
    return frozenset({TEXT, MARKDOWN, HTML, CSV, JSON, EML})


def normalize(content_type: str | None) -> str:
    """``"Text/Plain; charset=utf-8"`` -> ``"text/plain"``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def from_extension(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    if dot < 0:
        return None
    ext = name[dot:]
    return _EXTENSIONS.get(ext) or mimetypes.types_map.get(ext)


def resolve(path: str, declared: str | None) -> str:
    """The declared type when it says something, else the extension's, else octet-stream."""
    value = normalize(declared)
    if value and value not in GENERIC:
        return value
    return from_extension(path) or "application/octet-stream"


def is_textual(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type in {JSON, "application/xml"}


def glob_specificity(glob: str) -> tuple[int, int]:
    """Sort key: fewer wildcards first, then the longer literal part."""
    wildcards = sum(glob.count(ch) for ch in "*?[")
    literal = len(glob) - wildcards
    return (wildcards, -literal)


T = TypeVar("T")


def most_specific(content_type: str, candidates: Iterable[tuple[str, T]]) -> T | None:
    """The value whose glob matches ``content_type`` and is most specific (ties: the first)."""
    matching: Sequence[tuple[str, T]] = [
        (glob, value) for glob, value in candidates if fnmatch.fnmatchcase(content_type, glob.strip().lower())
    ]
    if not matching:
        return None
    return min(matching, key=lambda item: glob_specificity(item[0]))[1]
