"""OCR with the Tesseract binary (``apt-get install tesseract-ocr``), called as a subprocess.

Images (PNG, JPEG, TIFF: a multi-page TIFF is one page of text per image page) go to Tesseract as
they are; a PDF's pages are rendered with PDFium first (:mod:`memory_engine.adapters.pdfium`), which
decodes the JBIG2 and CCITT fax images scans are stored in.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from memory_engine.adapters import pdfium
from memory_engine.domain import content_types as ct
from memory_engine.domain.chunking import normalize_text
from memory_engine.domain.documents import Page
from memory_engine.domain.ingestion_errors import ConverterFailed

#: What to do when the binary is missing; part of every such error.
INSTALL_HINT = ("install Tesseract (`apt-get install tesseract-ocr` on Debian/Ubuntu, `brew install tesseract` "
                "on macOS) and restart the engine")
#: The image types Tesseract reads here, with the file suffix it recognises them by.
IMAGE_SUFFIXES = {ct.PNG: ".png", ct.JPEG: ".jpg", ct.TIFF: ".tif"}


class TesseractOcr:
    """``languages``: Tesseract's ``-l`` (``eng``, ``deu+eng``; each needs its
    ``tesseract-ocr-<lang>`` package). ``timeout_s`` bounds one page."""

    def __init__(self, binary: str = "tesseract", *, languages: str = "eng", timeout_s: float = 120.0) -> None:
        self.binary = binary
        self.languages = languages
        self.timeout_s = timeout_s

    @staticmethod
    def available(binary: str = "tesseract") -> bool:
        return shutil.which(binary) is not None

    def pages(self, data: bytes, content_type: str, name: str) -> Iterator[Page]:
        """One page of text per page of the PDF or image. Raises ConverterFailed (Tesseract missing,
        a file it cannot read, a type it does not take) and the PDF's own errors (EncryptedPdf, ...)."""
        if content_type == ct.PDF:
            for number, image in pdfium.page_images(data, name=name):
                yield Page(number=number, text=normalize_text(self.read(image, ".png", f"{name} page {number}")))
        elif content_type in IMAGE_SUFFIXES:
            text = self.read(data, IMAGE_SUFFIXES[content_type], name)
            # Tesseract ends each page of a multi-page image with a form feed
            for number, page in enumerate(text.split("\f")[:-1] or [text], start=1):
                yield Page(number=number, text=normalize_text(page))
        else:
            raise ConverterFailed(f"{name} is {content_type}; OCR reads PDFs and PNG, JPEG and TIFF images")

    def read(self, image: bytes, suffix: str, name: str) -> str:
        """The text Tesseract reads in one image file (pages ended by form feeds)."""
        binary = shutil.which(self.binary)
        if binary is None:
            raise ConverterFailed(f"cannot OCR {name}: the `{self.binary}` binary is not installed; {INSTALL_HINT}")
        with tempfile.TemporaryDirectory(prefix="ocr-") as folder:
            source = Path(folder) / f"image{suffix}"
            source.write_bytes(image)
            try:
                done = subprocess.run(  # noqa: S603 - fixed argv, the file is ours
                    [binary, str(source), "stdout", "-l", self.languages, "--psm", "3"],
                    capture_output=True, timeout=self.timeout_s, check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise ConverterFailed(f"OCR of {name} took over {self.timeout_s:.0f} s; split the file or "
                                      "lower its resolution") from exc
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ConverterFailed(f"Tesseract could not read {name} ({detail[-1] if detail else done.returncode}); "
                                  "check that it is a valid image of its content type")
        return done.stdout.decode("utf-8", "replace")
