"""EPUB 2 and 3: the chapters in reading order (the package's spine, ``linear="no"`` items last), one
page per chapter (its spine position; a long chapter continues on further pages with the same
number). Each chapter's XHTML is read as HTML (:func:`html_page.html_blocks`, the whole body: a chapter
has no site navigation); the package's ``dc:title`` becomes the document title. DRM-protected
books (``META-INF/encryption.xml`` naming content files) fail with a reason.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from urllib.parse import unquote

from memory_engine.adapters.extractors.containers import Container, ZipExtractor, title_in
from memory_engine.adapters.extractors.html_page import html_blocks
from memory_engine.adapters.extractors.sections import Budget, DocumentInfo
from memory_engine.adapters.extractors.text import decode_text
from memory_engine.domain.documents import MAX_PAGES, Page
from memory_engine.domain.ingestion_errors import DocumentUnreadable, TooLarge

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/x-dtbook+xml"})


class EpubExtractor(ZipExtractor):
    what = "EPUB book"

    def title(self, container: Container) -> str | None:
        return None  # the package document's, read with the spine

    def read(self, container: Container, name: str, info: DocumentInfo) -> Iterator[Page]:
        """One page per spine item."""
        root = container.xml("META-INF/container.xml").find(f"{_CONTAINER}rootfiles/{_CONTAINER}rootfile")
        if root is None or not root.get("full-path"):
            raise DocumentUnreadable(f"{name} is not a complete {self.what}: META-INF/container.xml names no package")
        package_path = root.get("full-path", "")
        if container.has("META-INF/encryption.xml") and b"EncryptedData" in container.read("META-INF/encryption.xml"):
            raise DocumentUnreadable(f"{name} is DRM-protected (its content is encrypted); upload a DRM-free copy")
        package = container.xml(package_path)
        folder = posixpath.dirname(package_path)
        manifest = {item.get("id", ""): (posixpath.normpath(posixpath.join(folder, unquote(item.get("href", "")))),
                                         item.get("media-type", ""))
                    for item in package.iter(f"{_OPF}item")}
        linear: list[str] = []
        later: list[str] = []
        for ref in package.iter(f"{_OPF}itemref"):
            target = manifest.get(ref.get("idref", ""))
            if target is not None and target[1] in _HTML_TYPES:
                (later if ref.get("linear") == "no" else linear).append(target[0])
        chapters = linear + later
        if len(chapters) > MAX_PAGES:
            raise TooLarge(f"{name} has {len(chapters)} chapters; the limit is {MAX_PAGES}: split it")
        info.title = title_in(package)
        return self._read(container, chapters, info, name)

    @staticmethod
    def _read(container: Container, chapters: list[str], info: DocumentInfo, name: str) -> Iterator[Page]:
        budget = Budget(info)
        chapter_info = DocumentInfo()
        try:
            for number, part in enumerate(chapters, start=1):
                if not container.has(part) or budget.exhausted:
                    continue
                markup = decode_text(container.read(part), name=f"{name}: {part}")
                yield from html_blocks(markup, chapter_info, main_content=False, number=number, budget=budget,
                                       title_heading=False)
        finally:
            info.notes.extend(chapter_info.notes)
