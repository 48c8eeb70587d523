"""The built-in extractors are what a user's ingestion rule overrides, so docs/ingestion.md "Formats"
names every content type read natively, and every type said to be native has its extractor."""

from __future__ import annotations

from pathlib import Path

from memory_engine.adapters.extractors import native_extractors
from memory_engine.domain import content_types as ct

DOC = Path(__file__).resolve().parents[4] / "docs" / "ingestion.md"


def _formats_section() -> str:
    text = DOC.read_text("utf-8")
    start = text.index("\n## Formats\n")
    return text[start:text.index("\n## ", start + 1)]


def test_every_native_content_type_has_an_extractor_and_no_other() -> None:
    assert set(native_extractors()) == set(ct.NATIVE)


def test_the_formats_section_names_every_native_content_type() -> None:
    section = _formats_section()
    missing = sorted(kind for kind in ct.NATIVE if f"`{kind}`" not in section)
    assert not missing, f"docs/ingestion.md 'Formats' does not name {missing}"
