"""Scans made in the test: text drawn into an image with Pillow, and that image as a PDF page with
no text layer (Pillow stores a 1-bit image with the CCITT fax codec pypdf cannot decode)."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfWriter


def text_image(*lines: str, mode: str = "L") -> Image.Image:
    font = ImageFont.load_default(size=56)
    image = Image.new("L", (1900, 120 + 100 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for index, line in enumerate(lines):
        draw.text((60, 60 + 100 * index), line, fill=0, font=font)
    return image.convert(mode)


def png(*lines: str) -> bytes:
    out = io.BytesIO()
    text_image(*lines).save(out, "PNG")
    return out.getvalue()


def scanned_pdf(*lines: str) -> bytes:
    """A one-page PDF whose only content is a 1-bit (CCITT Group 4) image of ``lines``."""
    out = io.BytesIO()
    text_image(*lines, mode="1").save(out, "PDF", resolution=200)
    return out.getvalue()


def blank_pdf(pages: int = 3) -> bytes:
    """A PDF of ``pages`` empty pages (no text, no image)."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
