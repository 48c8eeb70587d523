"""The console's static files: colour contrast of its palette (WCAG AA) and the rules that keep the key
and stored text safe (no innerHTML, no localStorage, the key only in sessionStorage)."""

from __future__ import annotations

import re

import pytest

from memory_engine.http.console import console_files


def _palette() -> dict[str, str]:
    css = console_files()["console.css"].decode()
    root = css[css.index(":root"):css.index("}", css.index(":root"))]
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", root))


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize(("text", "background"), [
    ("fg", "bg"), ("muted", "bg"), ("muted", "panel"), ("accent", "bg"), ("accent-fg", "accent"),
    ("grey-fg", "grey-bg"), ("red", "bg"), ("green", "bg"), ("fg", "panel"),
])
def test_text_colours_meet_wcag_aa(text: str, background: str) -> None:
    palette = _palette()
    assert contrast(palette[text], palette[background]) >= 4.5, (text, background)


def test_the_script_never_writes_markup_or_persists_the_key() -> None:
    modules = [body.decode() for name, body in console_files().items() if name.endswith(".js")]
    assert len(modules) > 1  # every module of the console is read, not only the entry point
    code = "\n".join(line for script in modules for line in script.splitlines() if not line.lstrip().startswith("//"))
    assert "innerHTML" not in code and "outerHTML" not in code and "insertAdjacentHTML" not in code
    assert "localStorage" not in code and "document.cookie" not in code
    assert "eval(" not in code and "new Function" not in code
    assert code.count("sessionStorage.setItem") == 1
    # the key goes in the Authorization header, never in a URL
    assert "Authorization: `Bearer ${key}`" in code


def test_the_page_has_no_inline_script_or_style_for_the_csp_to_block() -> None:
    page = console_files()["index.html"].decode()
    assert re.search(r"<script(?![^>]*\bsrc=)", page) is None
    assert "<style" not in page and " style=" not in page
    assert re.search(r"\son[a-z]+\s*=", page) is None  # no inline event handlers


def test_every_module_the_console_imports_is_served_and_every_served_module_is_imported() -> None:
    files = console_files()
    imported = {"console.js"} | {
        name for body in files.values() for name in re.findall(r'^import .* from "\./([\w.-]+\.js)";$', body.decode(), re.M)}
    assert imported == {name for name in files if name.endswith(".js")}
    assert '<script type="module" src="console.js">' in files["index.html"].decode()
