"""Versioned prompts shipped as package data (``prompts/*.md``)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

#: The default extraction prompt; every run records it in its summary.
EXTRACTION_PROMPT_VERSION = "extraction_v1"

_SECTION = re.compile(r"^<!--\s*(\w+)\s*-->\s*$", re.M)


@dataclass(frozen=True)
class ExtractionPrompt:
    version: str
    task: str
    contract: str


@functools.cache
def extraction_prompt(version: str = EXTRACTION_PROMPT_VERSION) -> ExtractionPrompt:
    """The ``task`` and ``contract`` sections of ``prompts/<version>.md``.

    Raises FileNotFoundError for an unknown version and ValueError when a section is missing.
    """
    text = resources.files(__package__).joinpath(f"{version}.md").read_text(encoding="utf-8")
    parts = _SECTION.split(text)
    sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    missing = {"task", "contract"} - sections.keys()
    if missing:
        raise ValueError(f"prompt {version} lacks section(s) {sorted(missing)}")
    return ExtractionPrompt(version=version, task=sections["task"], contract=sections["contract"])
