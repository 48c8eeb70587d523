"""Hostile files of the formats read natively (issue 37): zip bombs in each container, a
password-protected Office file, entity expansion, a workbook of a million cells, an HTML page of
50 MB, an e-mail nested thousands of parts deep. Built here, so the tests state what they attack."""

from __future__ import annotations

import io
import zipfile

from memory_engine.domain import content_types as ct
from memory_engine.domain.sniffing import CFB_MAGIC
from tests.support import office

BILLION_LAUGHS = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                  + "".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'
                            for i in range(1, 10))
                  + ']><root>&lol9;</root>')


def zip_bomb(content_type: str, member: str, inflated: int = 64 * 2**20) -> bytes:
    """A container of ``content_type`` (its manifest right, so it is sniffed as that format) whose
    ``member`` inflates to ``inflated`` bytes of whitespace from about a thousandth of that."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        if content_type in (ct.ODT, ct.EPUB):
            archive.writestr(zipfile.ZipInfo("mimetype"), content_type, compress_type=zipfile.ZIP_STORED)
        else:
            archive.writestr("[Content_Types].xml", office.CONTENT_TYPES)
        with archive.open(member, "w", force_zip64=True) as stream:
            stream.write(b"<a>")
            block = b" " * 2**20
            for _ in range(inflated // len(block)):
                stream.write(block)
            stream.write(b"</a>")
    return buffer.getvalue()


def valid(content_type: str) -> bytes:
    """A small readable file of ``content_type`` (a container), a few dozen KB."""
    words = " ".join(f"word{i}" for i in range(4000))
    if content_type == ct.DOCX:
        return office.docx(f"<w:p><w:r><w:t>{words}</w:t></w:r></w:p>")
    if content_type == ct.PPTX:
        return office.pptx([(office.shape("Title", "title") + office.shape(words), "")])
    if content_type == ct.XLSX:
        rows = "".join(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>w{i} {words[:200]}</t></is></c></row>'
                       for i in range(1, 200))
        return office.xlsx({"S": rows})
    if content_type == ct.ODT:
        return office.odt(f"<text:p>{words}</text:p>")
    if content_type == ct.EPUB:
        return office.epub({"a.xhtml": f"<p>{words}</p>"}, spine=["a.xhtml"])
    raise ValueError(content_type)


def encrypted_office() -> bytes:
    """What Office writes for a password-protected .docx/.xlsx/.pptx: an OLE2 compound file holding
    the ``EncryptionInfo`` and ``EncryptedPackage`` streams (their names UTF-16 in its directory)."""
    directory = "".join(name.ljust(32, "\0") for name in ("Root Entry", "EncryptionInfo", "EncryptedPackage"))
    return CFB_MAGIC + b"\x00" * 504 + directory.encode("utf-16-le") + bytes(range(256)) * 40


def million_cell_xlsx(rows: int = 100_000, columns: int = 10) -> bytes:
    """One sheet: a header (Item, Amount, c3...) and ``rows`` rows of ``columns`` cells (an item
    name, then numbers): a million cells by default."""
    letters = [chr(65 + j) for j in range(columns)]
    names = ["Item", "Amount"] + [f"c{j + 1}" for j in range(2, columns)]
    parts = ['<row r="1">' + "".join(f'<c r="{letters[j]}1" t="inlineStr"><is><t>{names[j]}</t></is></c>'
                                     for j in range(columns)) + "</row>"]
    for i in range(2, rows + 2):
        cells = "".join(f'<c r="{letter}{i}"><v>{i * 10 * j}</v></c>' for j, letter in enumerate(letters) if j)
        parts.append(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>item {i}</t></is></c>{cells}</row>')
    return office.xlsx({"Ledger": "".join(parts)})


def huge_html(size: int = 50_000_000) -> bytes:
    """A page of ``size`` bytes: a short article, then an inline script holding the rest (a page
    that large is mostly inlined data)."""
    article = ("<html><head><title>Fjords</title></head><body><article><h1>Fjords</h1>"
               + "<p>Snow falls on the long fjord, and the ferry waits quietly by the pier.</p>" * 20
               + "</article><script>var blob = '")
    end = "';</script></body></html>"
    return (article + "A" * (size - len(article) - len(end)) + end).encode()


def deeply_nested_email(depth: int = 2000) -> bytes:
    """A message of ``depth`` multipart parts each nested in the one before."""
    head = "From: a@example.com\nTo: b@example.com\nSubject: deep\nMIME-Version: 1.0\n"
    opening = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n' for i in range(depth))
    closing = "".join(f"--b{i}--\n" for i in reversed(range(depth)))
    return (head + opening + "Content-Type: text/plain\n\nhello\n" + closing).encode()
