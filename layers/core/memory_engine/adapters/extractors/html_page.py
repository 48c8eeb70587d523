"""HTML: the page's main content as a reader sees it, in the spirit of Mozilla's Readability.

1. The tree (:mod:`html_tree`) never holds scripts, styles, forms, frames or hidden elements.
2. Boilerplate goes: ``<nav>``, ``<header>``, ``<footer>``, ``<aside>``, the ARIA landmarks of the
   same roles, and elements whose class or id says they are comments, share bars, sidebars, menus,
   ads, cookie banners... (unless it also says article/content/main).
3. The main content is the element with the best score: every paragraph-like element with at least
   25 characters scores 1 + its commas + one point per 100 characters (at most 3), given to its
   parent in full, its grandparent half and higher ancestors a third; a score is discounted by the
   share of its text inside links. Siblings of the winner that score well (or are long paragraphs
   with few links) join it. A page without such paragraphs, or whose best element holds less than
   :data:`MIN_MAIN_CHARS` characters, keeps its whole body (boilerplate removed).
4. It is rendered as headings (``#``), paragraphs, list items and table rows with their header.

The ``<title>`` becomes the document title (and the first heading when the content does not start
with it). Markup over :data:`MAX_MARKUP_CHARS` is read up to that point and the rest is noted.
EPUB chapters and e-mail bodies use :func:`html_blocks` with ``main_content=False`` (no scoring:
the whole body minus scripts, styles and forms).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memory_engine.adapters.extractors.html_tree import HEADINGS, Node, inline_text, parse, render
from memory_engine.adapters.extractors.sections import Budget, DocumentInfo, Extracted, Paginator
from memory_engine.adapters.extractors.text import decode_text
from memory_engine.domain.documents import Page
from memory_engine.ports.ocr import OcrEngine

MAX_MARKUP_CHARS = 8_000_000
#: Main content shorter than this is not believed: the whole body (minus boilerplate) is read.
MIN_MAIN_CHARS = 500
_BOILERPLATE_TAGS = frozenset({"nav", "header", "footer", "aside", "form"})
_BOILERPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar",
                                "dialog", "alertdialog", "toolbar"})
_UNLIKELY = re.compile(r"-ad-|ad-break|agegate|banner|breadcrumb|combx|comment|community|cookie|cover-wrap|disqus|"
                       r"extra|footer|gdpr|header|legends|menu|modal|newsletter|pagination|pager|popup|promo|related|"
                       r"remark|replies|rss|share|shoutbox|sidebar|skip|skyscraper|social|sponsor|subscribe|"
                       r"supplemental|tags|widget|yom-remote|masthead|navbar", re.I)
_MAYBE = re.compile(r"and|article|body|column|content|main|shadow|post|entry|story|text", re.I)
_POSITIVE = re.compile(r"article|body|content|entry|hentry|h-entry|main|page|pagination|post|text|blog|story", re.I)
_NEGATIVE = re.compile(r"-ad-|hidden|^hid$| hid$| hid |^hid |banner|combx|comment|com-|contact|foot|footer|footnote|"
                       r"gdpr|masthead|media|meta|outbrain|promo|related|scroll|share|shoutbox|sidebar|skyscraper|"
                       r"sponsor|shopping|tags|tool|widget", re.I)
_PARAGRAPHS = frozenset({"p", "pre", "td", "blockquote"})
_BLOCK_CHILDREN = frozenset({"a", "blockquote", "dl", "div", "img", "ol", "p", "pre", "table", "ul", "section",
                             "article", "h1", "h2", "h3", "h4", "h5", "h6"})
_TAG_SCORE = {"div": 5, "article": 8, "main": 8, "section": 3, "pre": 3, "td": 3, "blockquote": 3, "address": -3,
              "ol": -3, "ul": -3, "dl": -3, "dd": -3, "dt": -3, "li": -3, "form": -3, "th": -5,
              **{h: -5 for h in HEADINGS}}


class HtmlExtractor:
    def pages(self, data: bytes, *, name: str, ocr: OcrEngine | None = None) -> Iterator[Page]:
        """The main content in sections (headings of level 1-2 start a page); ``ocr`` is not used."""
        info = DocumentInfo()
        return Extracted(html_blocks(decode_text(data, name=name), info, main_content=True), info)


def html_blocks(markup: str, info: DocumentInfo, *, main_content: bool, number: int | None = None,
                budget: Budget | None = None, title_heading: bool = True) -> Iterator[Page]:
    """Pages of ``markup``'s text (see the module docstring); ``info`` gets the title and notes."""
    if len(markup) > MAX_MARKUP_CHARS:
        info.notes.append(f"the HTML is {len(markup):,} characters; only the first {MAX_MARKUP_CHARS:,} were read")
        markup = markup[:MAX_MARKUP_CHARS]
    tree = parse(markup)
    if tree.truncated:
        info.notes.append("the page has more elements than the reader takes; the end of it was not read")
    if tree.title and info.title is None:
        info.title = tree.title
    body = tree.root.find("body") or tree.root
    _drop_hidden(body, boilerplate=main_content)
    content = main_node(body) if main_content else body
    if len(content.text()) < MIN_MAIN_CHARS:  # too little to be an article (a list page, a fragment): the body
        content = body
    out = Paginator(number=number, budget=budget or Budget(info))
    if title_heading and tree.title and main_content and not _starts_with(content, tree.title):
        out.heading(1, tree.title)
    render(content, out)
    yield from out.finish()


def _starts_with(node: Node, title: str) -> bool:
    first = next((n for n in node.elements() if n.tag in HEADINGS), None)
    if first is None:
        return False
    heading, named = _words(inline_text(first)), _words(title)
    return bool(heading) and len(heading & named) >= 0.6 * min(len(heading), len(named))


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _drop_hidden(root: Node, *, boilerplate: bool) -> None:
    """Removes hidden elements (and boilerplate ones with ``boilerplate``) from the tree."""
    stack = [root]
    while stack:
        node = stack.pop()
        kept: list[Node | str] = []
        for child in node.children:
            if isinstance(child, Node) and (_hidden(child) or (boilerplate and _is_boilerplate(child))):
                continue
            kept.append(child)
            if isinstance(child, Node):
                stack.append(child)
        node.children = kept


def _hidden(node: Node) -> bool:
    style = node.attrs.get("style", "").replace(" ", "").lower()
    return ("hidden" in node.attrs or node.attrs.get("aria-hidden") == "true"
            or "display:none" in style or "visibility:hidden" in style)


def _is_boilerplate(node: Node) -> bool:
    if node.tag in ("body", "html", "main", "article"):
        return False
    if node.tag in _BOILERPLATE_TAGS or node.attrs.get("role", "").lower() in _BOILERPLATE_ROLES:
        return True
    marks = f"{node.attrs.get('class', '')} {node.attrs.get('id', '')}"
    return bool(_UNLIKELY.search(marks)) and not _MAYBE.search(marks)


def _class_weight(node: Node) -> float:
    weight = 0.0
    for mark in (node.attrs.get("class", ""), node.attrs.get("id", "")):
        if mark and _NEGATIVE.search(mark):
            weight -= 25
        if mark and _POSITIVE.search(mark):
            weight += 25
    return weight


def _link_density(node: Node, text_length: int) -> float:
    if not text_length:
        return 0.0
    linked = sum(len(a.text()) for a in node.elements() if a.tag == "a")
    return min(1.0, linked / text_length)


def _paragraph_like(node: Node) -> bool:
    if node.tag in _PARAGRAPHS:
        return True
    return node.tag == "div" and not any(isinstance(c, Node) and c.tag in _BLOCK_CHILDREN for c in node.children)


def main_node(body: Node) -> Node:
    """The element holding the main content (``body`` when nothing scores)."""
    scores: dict[int, float] = {}
    nodes: dict[int, Node] = {}

    def init(node: Node) -> None:
        if id(node) not in scores:
            scores[id(node)] = _TAG_SCORE.get(node.tag, 0) + _class_weight(node)
            nodes[id(node)] = node

    for node in list(body.elements()):
        if not _paragraph_like(node):
            continue
        text = node.text()
        if len(text) < 25:
            continue
        score = 1 + text.count(",") + min(len(text) // 100, 3)
        ancestor, level = node.parent, 0
        while ancestor is not None and level < 5 and ancestor.tag != "#root":
            init(ancestor)
            scores[id(ancestor)] += score / (1 if level == 0 else 2 if level == 1 else level * 3)
            ancestor, level = ancestor.parent, level + 1
    if not scores:
        return body
    final = {key: value * (1 - _link_density(nodes[key], len(nodes[key].text()))) for key, value in scores.items()}
    best_key = max(final, key=lambda k: final[k])
    best = nodes[best_key]
    parent = best.parent
    if parent is None or parent.tag == "#root":
        return best
    threshold = max(10.0, final[best_key] * 0.2)
    siblings = [c for c in parent.children if isinstance(c, Node)]
    joined = [s for s in siblings if s is best or final.get(id(s), -1e9) >= threshold or _good_paragraph(s)]
    if len(joined) == 1:
        return best
    wrapper = Node("div", {}, parent)
    wrapper.children = list(joined)
    return wrapper


def _good_paragraph(node: Node) -> bool:
    if node.tag != "p":
        return False
    text = node.text()
    density = _link_density(node, len(text))
    return (len(text) > 80 and density < 0.25) or (0 < len(text) <= 80 and density == 0 and ". " in text)
