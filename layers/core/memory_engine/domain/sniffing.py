"""A file's content type from its bytes: magic numbers, and for zip containers their manifest
(``mimetype`` for OpenDocument and EPUB, ``[Content_Types].xml`` and the main part for Office Open
XML), so a ``.docx`` renamed ``.pdf`` or uploaded as ``application/octet-stream`` is still read as
Word. :func:`detect` weighs the bytes against the declared type and the extension: definite bytes
win, and the difference is reported so it can be recorded on the document.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

from memory_engine.domain import content_types as ct

#: Other names of the types read natively.
ALIASES = {
    "application/xhtml+xml": ct.HTML,
    "text/x-markdown": ct.MARKDOWN,
    "application/x-zip-compressed": ct.ZIP,
    "text/json": ct.JSON,
    "text/comma-separated-values": ct.CSV,
    "application/csv": ct.CSV,
}
_OOXML_MAIN = (("word/document.xml", ct.DOCX), ("ppt/presentation.xml", ct.PPTX), ("xl/workbook.xml", ct.XLSX))
_ODF_EPUB = {ct.ODT, ct.EPUB}
#: The OLE2 compound file: legacy .doc/.xls/.ppt, and password-protected Office Open XML files.
CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_MAGIC = ((b"%PDF-", ct.PDF), (b"\x89PNG\r\n\x1a\n", ct.PNG), (b"\xff\xd8\xff", ct.JPEG),
          (b"II*\x00", ct.TIFF), (b"MM\x00*", ct.TIFF))
_HTML_START = re.compile(rb"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html[\s>]|head[\s>]|body[\s>])", re.I | re.S)
_MAIL_HEADER = re.compile(rb"(?:from|to|subject|date|received|return-path|message-id|mime-version|delivered-to"
                          rb"|x-[a-z0-9-]+):[ \t]", re.I)
_BOM = b"\xef\xbb\xbf"


def canonical(content_type: str | None) -> str:
    """Normalized, with the aliases of the native types replaced (``application/xhtml+xml`` -> HTML)."""
    value = ct.normalize(content_type)
    return ALIASES.get(value, value)


def zip_kind(data: bytes) -> str | None:
    """The format of a zip container by its manifest; ``application/zip`` for another zip, None
    when the bytes are not a readable zip. Reads the central directory and at most the small
    ``mimetype`` member (no decompression of anything large)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "mimetype" in names and archive.getinfo("mimetype").file_size <= 200:
                declared = archive.read("mimetype").decode("ascii", "replace").strip().lower()
                if declared in _ODF_EPUB:
                    return declared
            if "[Content_Types].xml" in names:
                for main, kind in _OOXML_MAIN:
                    if main in names:
                        return kind
            if "META-INF/container.xml" in names and any(n.lower().endswith(".opf") for n in names):
                return ct.EPUB
            return ct.ZIP
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError,
            RuntimeError):
        return None


def sniff(data: bytes) -> str | None:
    """The type the bytes say for sure (binary signatures, zip manifests), else None."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        return zip_kind(data)
    return None


def sniff_text(data: bytes) -> str | None:
    """HTML, an e-mail message or JSON by how the text starts (only asked when the bytes have no
    binary signature)."""
    head = data[:4096].removeprefix(_BOM)
    if b"\x00" in head:
        return None
    if _HTML_START.match(head):
        return ct.HTML
    stripped = head.lstrip()
    if stripped[:1] in (b"{", b"["):
        return ct.JSON
    lines = head.split(b"\n", 8)
    if lines and lines[0].startswith(b"From ") and b"@" in lines[0]:  # an mbox "From " line
        lines = lines[1:]
    headers = [line for line in lines[:6] if _MAIL_HEADER.match(line)]
    return ct.EML if len(headers) >= 2 else None


@dataclass(frozen=True)
class Detection:
    """The type the file is read as; ``declared`` what the upload or the extension said, when the
    bytes said otherwise (None: no mismatch)."""

    content_type: str
    declared: str | None = None


def detect(path: str, declared: str | None, data: bytes) -> Detection:
    """The content type of ``data`` stored at ``path`` and declared as ``declared``.

    Definite bytes win over what is declared (a zip container by its manifest, a PDF or an image by
    its signature); a generic zip keeps the declared Office/ODF/EPUB type, so its extractor says what
    is missing. Without a signature, text that claims a binary format we read is taken for what it
    starts as (HTML, e-mail, JSON), and a generic declaration is resolved by the start of the text,
    then the extension. A declared textual type is kept (``.txt`` holding HTML stays plain text)."""
    claimed = canonical(declared)
    if not claimed or claimed in ct.GENERIC:
        by_extension = canonical(ct.from_extension(path)) if ct.from_extension(path) else ""
        claimed = "" if by_extension in ct.GENERIC else by_extension  # ".bin" says nothing either
        generic = True
    else:
        generic = False
    by_bytes = sniff(data)
    if by_bytes == ct.ZIP and claimed in ct.ZIP_FORMATS:
        by_bytes = None
    # an OLE2 file (encrypted OOXML, legacy Office) keeps its declared type: that extractor says which
    text_may_say = (generic and not claimed) or claimed in ct.ZIP_FORMATS or claimed == ct.PDF
    if by_bytes is None and data[:8] != CFB_MAGIC and text_may_say:
        by_bytes = sniff_text(data)
    if by_bytes is None:
        return Detection(claimed or "application/octet-stream")
    if by_bytes == claimed:
        return Detection(claimed)
    return Detection(by_bytes, declared=claimed or None)
