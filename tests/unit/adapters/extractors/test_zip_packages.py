"""The zip-package extractors (Word, PowerPoint, Excel, OpenDocument, EPUB) share ``ZipExtractor``: the
package is closed once its pages are read, and when the reader stops early; the title comes from the
format's own part."""

from __future__ import annotations

import gc

import pytest

from memory_engine.adapters.extractors import containers, native_extractors
from memory_engine.domain import content_types as ct
from tests.support import office
from tests.support.office import shape

PARA = "<w:p><w:r><w:t>{}</w:t></w:r></w:p>"
SAMPLES = {
    ct.DOCX: lambda: office.docx(PARA.format("one") + PARA.format("two")),
    ct.PPTX: lambda: office.pptx([(shape("First", "title"), ""), (shape("Second", "title"), "")]),
    ct.XLSX: lambda: office.xlsx({"A": '<row r="1"><c r="A1" t="inlineStr"><is><t>cell</t></is></c></row>',
                                  "B": '<row r="1"><c r="A1" t="inlineStr"><is><t>other</t></is></c></row>'}),
    ct.ODT: lambda: office.odt("<text:p>one</text:p><text:p>two</text:p>"),
    ct.EPUB: lambda: office.epub({"a.xhtml": "<p>one</p>", "b.xhtml": "<p>two</p>"}, spine=["a.xhtml", "b.xhtml"]),
}


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = containers.Container.close

    def close(self: containers.Container) -> None:
        seen.append(self.name)
        original(self)

    monkeypatch.setattr(containers.Container, "close", close)
    return seen


@pytest.mark.parametrize("content_type", sorted(SAMPLES))
def test_the_package_is_closed_once_read_and_when_the_reader_stops(content_type: str, closed: list[str]) -> None:
    extractor = native_extractors()[content_type]
    assert isinstance(extractor, containers.ZipExtractor)
    pages = list(extractor.pages(SAMPLES[content_type](), name="whole"))
    assert pages and closed == ["whole"]

    produced = extractor.pages(SAMPLES[content_type](), name="stopped")
    next(produced)
    assert closed == ["whole"]  # still reading
    del produced
    gc.collect()
    assert closed == ["whole", "stopped"]


def test_opendocument_title_comes_from_meta_xml() -> None:
    data = office.zip_parts({
        "mimetype": "application/vnd.oasis.opendocument.text",
        "content.xml": f'<office:document-content {office.ODF_NS}><office:body><office:text><text:p>body</text:p>'
                       "</office:text></office:body></office:document-content>",
        "meta.xml": '<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
                    'xmlns:dc="http://purl.org/dc/elements/1.1/"><office:meta><dc:title>  Harbour\n log </dc:title>'
                    "</office:meta></office:document-meta>",
    }, stored_first="mimetype")
    produced = native_extractors()[ct.ODT].pages(data, name="log.odt")
    assert [p.text for p in produced] == ["body"]
    assert getattr(produced, "info").title == "Harbour log"
