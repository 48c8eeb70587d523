"""A small, forgiving HTML tree on the standard library's ``html.parser``, and its rendering as the
structured blocks of :mod:`sections` (headings, paragraphs, lists, tables with their header).

The parser closes what browsers close implicitly (``<p>`` before a block, ``<li>`` before the next
``<li>``, cells and rows), ignores stray end tags, never keeps the text of ``<script>``, ``<style>``
and the like, and stops building at :data:`MAX_NODES` elements (the rest of a page that large is not
read; :attr:`Node.truncated` says so).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser

from memory_engine.adapters.extractors.sections import Paginator, table_lines

MAX_NODES = 400_000
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                  "track", "wbr"})
#: Never text a reader sees.
DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas",
                     "head", "button", "select", "textarea", "input", "dialog", "map", "audio", "video", "picture"})
BLOCK = frozenset({"address", "article", "aside", "blockquote", "body", "dd", "details", "div", "dl", "dt",
                   "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
                   "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody",
                   "td", "tfoot", "th", "thead", "tr", "ul", "html", "caption", "center"})
HEADINGS = {f"h{i}": i for i in range(1, 7)}
_CLOSES_P = BLOCK - {"li", "td", "th", "tr", "tbody", "thead", "tfoot", "caption", "dd", "dt", "body", "html"}
_SPACE = re.compile(r"\s+")


class Node:
    __slots__ = ("attrs", "children", "parent", "tag")

    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def elements(self) -> Iterator[Node]:
        """Every element below this one, depth first, in document order."""
        stack = [c for c in reversed(self.children) if isinstance(c, Node)]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(c for c in reversed(node.children) if isinstance(c, Node))

    def text(self) -> str:
        parts: list[str] = []
        stack: list[Node | str] = [self]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                parts.append(item)
            else:
                stack.extend(reversed(item.children))
        return _SPACE.sub(" ", " ".join(parts)).strip()

    def find(self, tag: str) -> Node | None:
        return next((n for n in self.elements() if n.tag == tag), None)


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.current = self.root
        self.nodes = 0
        self.truncated = False
        self.title: str | None = None
        self._skip = 0  # inside script/style/...: text is dropped
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self.title is None:
            self._in_title, self.title = True, ""
        if self._skip:
            if tag in DROPPED and tag not in VOID:
                self._skip += 1
            return
        if tag in DROPPED and tag != "head":
            if tag not in VOID:
                self._skip = 1
            return
        if self.nodes >= MAX_NODES:
            self.truncated = True
            return
        self._close_implied(tag)
        node = Node(tag, {k: v or "" for k, v in attrs[:30]}, self.current)
        self.nodes += 1
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def _close_implied(self, tag: str) -> None:
        if tag in _CLOSES_P:
            self._close_open("p", stop={"div", "td", "th", "li", "section", "article", "blockquote"})
        if tag == "li":
            self._close_open("li", stop={"ul", "ol"})
        elif tag in ("dt", "dd"):
            self._close_open("dd", stop={"dl"})
            self._close_open("dt", stop={"dl"})
        elif tag in ("td", "th"):
            self._close_open("td", stop={"tr", "table"})
            self._close_open("th", stop={"tr", "table"})
        elif tag == "tr":
            self._close_open("tr", stop={"table"})
        elif tag == "option":
            self._close_open("option", stop={"select"})

    def _close_open(self, tag: str, stop: set[str]) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != "#root":
            if node.tag == tag:
                self.current = node.parent or self.root
                return
            if node.tag in stop:
                return
            node = node.parent

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skip:
            if tag in DROPPED:
                self._skip -= 1
            return
        node: Node | None = self.current
        while node is not None and node.tag != "#root":
            if node.tag == tag:
                self.current = node.parent or self.root
                return
            node = node.parent

    def handle_data(self, data: str) -> None:
        if self._in_title and self.title is not None:
            self.title += data
            return
        if self._skip or self.truncated:
            return
        self.current.children.append(data)


def parse(markup: str) -> TreeBuilder:
    builder = TreeBuilder()
    builder.feed(markup)
    builder.close()
    if builder.title is not None:
        builder.title = _SPACE.sub(" ", builder.title).strip() or None
    return builder


def inline_text(node: Node) -> str:
    """The text of ``node`` as one line (``<br>`` as a line break)."""
    parts: list[str] = []

    def walk(item: Node | str) -> None:
        if isinstance(item, str):
            parts.append(item)
        elif item.tag == "br":
            parts.append("\n")
        else:
            for child in item.children:
                walk(child)
            if item.tag in BLOCK:
                parts.append(" ")

    walk(node)
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def render(node: Node, out: Paginator) -> None:
    """``node``'s content as blocks: headings, paragraphs, list items, table rows, preformatted text."""
    _Renderer(out).walk(node, 0)


class _Renderer:
    def __init__(self, out: Paginator) -> None:
        self.out = out
        self.inline: list[str] = []

    def flush(self, prefix: str = "") -> None:
        text = "\n".join(" ".join(line.split()) for line in "".join(self.inline).split("\n"))
        text = "\n".join(line for line in text.split("\n") if line)
        self.inline = []
        if text:
            self.out.block(prefix + text)

    def walk(self, node: Node, depth: int) -> None:
        for child in node.children:
            if isinstance(child, str):
                self.inline.append(child)
                continue
            tag = child.tag
            if tag == "br":
                self.inline.append("\n")
            elif tag in HEADINGS:
                self.flush()
                self.out.heading(HEADINGS[tag], inline_text(child))
            elif tag in ("ul", "ol"):
                self.flush()
                self.list(child, depth)
            elif tag == "table":
                self.flush()
                self.table(child)
            elif tag == "pre":
                self.flush()
                text = "".join(c if isinstance(c, str) else c.text() for c in child.children).strip("\n")
                self.out.block(text)
            elif tag == "hr":
                self.flush()
            elif tag in BLOCK:
                self.flush()
                self.walk(child, depth)
                self.flush()
            else:
                self.walk(child, depth)

    def list(self, node: Node, depth: int) -> None:
        for item in node.children:
            if not isinstance(item, Node):
                continue
            if item.tag in ("ul", "ol"):
                self.list(item, depth + 1)
                continue
            nested = [c for c in item.children if isinstance(c, Node) and c.tag in ("ul", "ol")]
            own = Node(item.tag, {}, None)
            own.children = [c for c in item.children if not (isinstance(c, Node) and c.tag in ("ul", "ol"))]
            text = inline_text(own)
            if text:
                self.out.block("  " * depth + "- " + text.replace("\n", " "))
            for sub in nested:
                self.list(sub, depth + 1)

    def table(self, node: Node) -> None:
        rows: list[list[str]] = []
        for row in (n for n in node.elements() if n.tag == "tr"):
            if _owner_table(row) is not node:
                continue
            rows.append([inline_text(cell).replace("\n", " ") for cell in row.children
                         if isinstance(cell, Node) and cell.tag in ("td", "th")])
        caption = node.find("caption")
        if caption is not None:
            self.out.block(inline_text(caption))
        for line in table_lines(rows):
            self.out.block(line)


def _owner_table(node: Node) -> Node | None:
    parent = node.parent
    while parent is not None and parent.tag != "table":
        parent = parent.parent
    return parent
