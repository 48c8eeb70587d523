"""Opening the zip containers (Office Open XML, OpenDocument, EPUB) and their XML safely.

* Zip bombs: a member is read through a stream that stops at :data:`MAX_MEMBER_BYTES`, at a
  compression ratio over :data:`MAX_RATIO` (checked on what was actually inflated, not on the
  header, which may lie) and when the members read so far pass :data:`MAX_TOTAL_BYTES`; the
  archive may list at most :data:`MAX_MEMBERS` members.
* XML: parsed by defusedxml, which refuses entity declarations (billion laughs, quadratic blowup)
  and external entities / DTD retrieval.
* A password-protected Office file is an OLE2 compound file with an ``EncryptionInfo`` stream,
  not a zip: it fails with ``DocumentUnreadable`` saying so.
"""

from __future__ import annotations

import io
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import IO, ClassVar
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring, iterparse

from memory_engine.domain.documents import Page
from memory_engine.domain.ingestion_errors import DocumentUnreadable, TooLarge
from memory_engine.domain.sniffing import CFB_MAGIC
from memory_engine.ports.extractors import DocumentInfo, Extracted
from memory_engine.ports.ocr import OcrEngine

MAX_MEMBER_BYTES = 128 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
#: Inflated / compressed, checked once a member has inflated past :data:`RATIO_GRACE_BYTES`
#: (XML compresses 10-30x; a bomb 1000x and more).
MAX_RATIO = 200
RATIO_GRACE_BYTES = 4 * 1024 * 1024
MAX_MEMBERS = 20_000
_BLOCK = 256 * 1024


def ns_local(tag: str) -> str:
    """``{namespace}name`` -> ``name``."""
    return tag.rsplit("}", 1)[-1]


class Container:
    """A zip container read with limits; ``what`` names the format in messages ("Word document")."""

    def __init__(self, data: bytes, *, name: str, what: str) -> None:
        self.name, self.what = name, what
        if data[:8] == CFB_MAGIC:
            if b"E\x00n\x00c\x00r\x00y\x00p\x00t\x00i\x00o\x00n\x00I\x00n\x00f\x00o" in data:
                raise DocumentUnreadable(f"{name} is a password-protected {what}; save it without a password "
                                        "(File > Info > Protect) and upload it again")
            raise DocumentUnreadable(f"{name} is a legacy binary Office file (.doc/.xls/.ppt), not a {what}; "
                                     "save it in the current format (.docx/.xlsx/.pptx) and upload it again")
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            raise DocumentUnreadable(f"{name} is not a readable {what} (its zip container is damaged: {exc}); "
                                     "open and save it again, then upload it") from exc
        if len(infos) > MAX_MEMBERS:
            raise TooLarge(f"{name} holds {len(infos)} files in its container; the limit is {MAX_MEMBERS}")
        self.names = {info.filename for info in infos}
        self._read_total = 0

    def has(self, member: str) -> bool:
        return member in self.names

    def open(self, member: str) -> IO[bytes]:
        """A stream of the member's inflated bytes, within the limits. Raises DocumentUnreadable,
        TooLarge."""
        if member not in self.names:
            raise DocumentUnreadable(f"{self.name} is not a complete {self.what}: {member} is missing")
        try:
            info = self.zip.getinfo(member)
            if info.flag_bits & 0x1:
                raise DocumentUnreadable(f"{self.name} is an encrypted zip; upload it without a password")
            raw = self.zip.open(info)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError) as exc:
            raise DocumentUnreadable(f"{self.name}: {member} cannot be read ({exc}); the file is damaged") from exc
        return io.BufferedReader(_Bounded(raw, self, member, max(1, info.compress_size)), buffer_size=_BLOCK)

    def read(self, member: str) -> bytes:
        with self.open(member) as stream:
            return stream.read()

    def xml(self, member: str) -> Element:
        """The member parsed as XML (defused). Raises DocumentUnreadable."""
        data = self.read(member)
        try:
            root: Element = fromstring(data)
        except DefusedXmlException as exc:
            raise DocumentUnreadable(f"{self.name}: {member} declares XML entities or a DTD, which are refused "
                                     "(entity expansion); the file is not a normal "
                                     f"{self.what}") from exc
        except SyntaxError as exc:  # ParseError
            raise DocumentUnreadable(f"{self.name}: {member} is not well-formed XML ({exc}); the file is damaged") from exc
        return root

    def iter_xml(self, member: str) -> Iterator[Element]:
        """The member's elements as each one ends (for large sheets); the caller clears them."""
        stream = self.open(member)
        try:
            for _event, element in iterparse(stream, events=("end",)):
                yield element
        except DefusedXmlException as exc:
            raise DocumentUnreadable(f"{self.name}: {member} declares XML entities or a DTD, which are refused") from exc
        except SyntaxError as exc:
            raise DocumentUnreadable(f"{self.name}: {member} is not well-formed XML ({exc}); the file is damaged") from exc
        finally:
            stream.close()

    def close(self) -> None:
        self.zip.close()


class ZipExtractor(ABC):
    """The extractors of zip packages (Word, PowerPoint, Excel, OpenDocument, EPUB). :meth:`pages` opens
    the package, reads its :meth:`title` and hands it to the format's :meth:`read`; the package is
    closed once the pages are read or the reading stops. ``ocr`` is not used."""

    #: The format as a failure names it ("... is not a readable Word document").
    what: ClassVar[str]
    #: The part whose ``title`` element is the document's (Office Open XML: the core properties).
    title_part: ClassVar[str] = "docProps/core.xml"

    def pages(self, data: bytes, *, name: str, ocr: OcrEngine | None = None) -> Iterator[Page]:
        container = Container(data, name=name, what=self.what)
        info = DocumentInfo(title=self.title(container))
        return Extracted(_closing(container, self.read(container, name, info)), info)

    def title(self, container: Container) -> str | None:
        return title_in(container.xml(self.title_part)) if container.has(self.title_part) else None

    @abstractmethod
    def read(self, container: Container, name: str, info: DocumentInfo) -> Iterator[Page]:
        """Reads up front what must be there (a broken file fails at the call, as the port asks) and
        returns the pages, read lazily; ``info`` takes what the reading learns."""


def title_in(root: Element) -> str | None:
    """The text of the first ``title`` element under ``root`` (Dublin Core's ``dc:title``), spaces folded."""
    return next((" ".join((e.text or "").split()) for e in root.iter()
                 if ns_local(e.tag) == "title" and (e.text or "").strip()), None)


def _closing(container: Container, pages: Iterator[Page]) -> Iterator[Page]:
    try:
        yield from pages
    finally:
        container.close()


class _Bounded(io.RawIOBase):
    """Inflated bytes of one member, checked against the limits as they come."""

    def __init__(self, raw: IO[bytes], owner: Container, member: str, compressed: int) -> None:
        super().__init__()
        self._raw, self._owner, self._member, self._compressed = raw, owner, member, compressed
        self._count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        try:
            data = self._raw.read(min(len(buffer), _BLOCK))
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise DocumentUnreadable(f"{self._owner.name}: {self._member} cannot be inflated ({exc}); "
                                     "the file is damaged") from exc
        self._count += len(data)
        self._owner._read_total += len(data)
        what = f"{self._owner.name} ({self._owner.what})"
        if self._count > RATIO_GRACE_BYTES and self._count > MAX_RATIO * self._compressed:
            raise TooLarge(f"{what}: {self._member} inflates more than {MAX_RATIO} times its compressed size; "
                           "refused as a zip bomb")
        if self._count > MAX_MEMBER_BYTES:
            raise TooLarge(f"{what}: {self._member} inflates past {MAX_MEMBER_BYTES // 2**20} MB; refused as a zip bomb "
                           "or split the file")
        if self._owner._read_total > MAX_TOTAL_BYTES:
            raise TooLarge(f"{what} inflates past {MAX_TOTAL_BYTES // 2**20} MB in total; refused as a zip bomb "
                           "or split the file")
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()
