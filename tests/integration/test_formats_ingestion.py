"""The real Word, PowerPoint, Excel, HTML, EPUB, e-mail and OpenDocument files of
``../shared/data/formats`` (issue 37) ingested the two ways a user drops them, the drop folder and an
upload URL (``POST /v1/documents/uploads`` + PUT), then found with the hybrid search by the phrase
the data set's README names. For HTML, text that only the page's scripts and navigation hold is
not found, and no chunk holds markup."""

from __future__ import annotations

import re
import shutil
from typing import Any
from urllib.parse import urlsplit

import pytest

from memory_engine.bootstrap import Container
from memory_engine.local.drop_folder import DropFolderWatcher
from tests.conftest import shared_data
from tests.support.api_client import ApiClient

#: file -> (content type, phrases a reader finds in it, phrases only its boilerplate holds)
FILES: dict[str, tuple[str, list[str], list[str]]] = {
    "markitdown-test.docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                             ["49e168b7-d2ae-407f-a055-2167576f39a1", "AutoGen is an open-source framework"], []),
    "unstructured-category-level.docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                                         ["Call me Ishmael", "A top level list item"], []),
    "docx2python-240-DOP-1013A-lay-down-tubulars.docx": (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ["Lay Down Tubulars", "Review MSDS for thread dope being used."], []),
    "unstructured-sample-presentation.pptx": (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        ["This one is a sub-sub-bullet", "This is kinda backwards, huh?"], []),
    "unstructured-2023-half-year-analyses-by-segment.xlsx": (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ["Nestlé Health Science", "Powdered and Liquid Beverages"], []),
    "readability-ars-1.html": ("text/html", ["proof-of-concept code"], ["Your California Privacy Rights"]),
    "readability-firefox-nightly-blog.html": ("text/html", ["Bug 1553982"],
                                              ["Let's improve quality, build after build!"]),
    "readability-dropbox-blog.html": ("text/html", ["async task framework"], ["Select at least one topic"]),
    "unstructured-winter-sports.epub": ("application/epub+zip", ["THE TELEMARK TURN"], []),
    "unstructured-email-no-utf8-2014-03-17.111517.eml": ("message/rfc822", ["your account might have been hijacked"],
                                                         []),
    "docling-text_document_01.odt": ("application/vnd.oasis.opendocument.text", ["James Mosley", "Heading level 2: A"],
                                     []),
}
_MARKUP = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]*)?/?>")


def _squash(text: str) -> str:
    return " ".join(text.replace("’", "'").split()).lower()


def _search(api: ApiClient, query: str, path: str) -> list[dict[str, Any]]:
    r = api.post("/v1/knowledge/search", {"query": query, "document_paths": [path], "limit": 10})
    assert r.status == 200, r.json
    return list(r.json["results"])


def _chunks(container: Container, document_id: str) -> list[str]:
    with container.database.connection() as conn:
        rows = conn.execute(
            "SELECT c.content FROM document_chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.document_id = %s AND c.generation = d.active_generation ORDER BY c.chunk_index",
            (document_id,)).fetchall()
    return [row["content"] for row in rows]


def _settle(watcher: DropFolderWatcher, container: Container) -> None:
    assert watcher.scan(now=1000.0) == []
    runs = watcher.scan(now=1002.0)
    assert runs
    for run in runs:
        result = container.pipeline_starter.result(run, timeout=120)
        assert result.status in ("succeeded", "failed")


def _check(api: ApiClient, container: Container, path: str, name: str) -> None:
    content_type, phrases, boilerplate = FILES[name]
    doc = api.get("/v1/documents", params={"path_prefix": path}).json["data"][0]
    assert doc["status"] == "ready", doc
    assert doc["content_type"] == content_type
    chunks = _chunks(container, doc["id"])
    for phrase in phrases:
        found = _search(api, phrase, path)
        assert any(_squash(phrase) in _squash(r["content"]) for r in found), (name, phrase, [r["content"][:80] for r in found])
    for phrase in boilerplate:
        assert not any(_squash(phrase) in _squash(r["content"]) for r in _search(api, phrase, path)), (name, phrase)
        assert not any(_squash(phrase) in _squash(chunk) for chunk in chunks), (name, phrase)
    if content_type == "text/html":
        assert not [chunk for chunk in chunks if _MARKUP.search(chunk)], name
        assert doc["title"], "the page's <title> is the document's title"


@pytest.fixture(scope="module")
def dropped(api: ApiClient, container: Container) -> str:
    # Given every file of the data set dropped into drop/acme/dropped/ (under its own name)
    root = container.settings.drop_dir
    for name in FILES:
        target = root / "acme" / "dropped" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared_data("formats", name), target)
    # When the drop folder's watcher takes them
    _settle(DropFolderWatcher(container, root, stable_seconds=1.0), container)
    return "/dropped/"


@pytest.fixture(scope="module")
def uploaded(api: ApiClient, container: Container) -> str:
    # Given an upload URL per file, asked without a content type (the extension says it)...
    for name in FILES:
        r = api.post("/v1/documents/uploads", {"path": f"/uploaded/{name}"}, headers={"host": "127.0.0.1:8787"})
        assert r.status == 201, r.json
        put = ApiClient(None).request("PUT", urlsplit(r.json["upload_url"]).path,
                                      body=shared_data("formats", name).read_bytes(), headers=r.json["headers"])
        assert put.status == 200, put.json
    # When the uploads arrive
    _settle(DropFolderWatcher(container, container.settings.drop_dir, stable_seconds=1.0), container)
    return "/uploaded/"


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_format_dropped_is_ready_and_found_by_its_phrase(api: ApiClient, container: Container,
                                                              dropped: str, name: str) -> None:
    # Then each is ready, read as its type, and found by its phrases (and not by its boilerplate)
    _check(api, container, dropped + name, name)


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_format_uploaded_is_ready_and_found_by_its_phrase(api: ApiClient, container: Container,
                                                               uploaded: str, name: str) -> None:
    _check(api, container, uploaded + name, name)


def test_a_docx_uploaded_as_a_pdf_is_read_as_word_and_the_mismatch_recorded(api: ApiClient,
                                                                            container: Container) -> None:
    # Given a Word file uploaded under a .pdf name, declared application/pdf
    r = api.post("/v1/documents/uploads", {"path": "/mismatch/paper.pdf", "content_type": "application/pdf"},
                        headers={"host": "127.0.0.1:8787"})
    assert r.status == 201 and r.json["headers"] == {"Content-Type": "application/pdf"}
    put = ApiClient(None).request("PUT", urlsplit(r.json["upload_url"]).path,
                                  body=shared_data("formats", "markitdown-test.docx").read_bytes(),
                                  headers=r.json["headers"])
    assert put.status == 200
    # When it is ingested
    _settle(DropFolderWatcher(container, container.settings.drop_dir, stable_seconds=1.0), container)
    # Then the bytes win: it is read as Word, and what was declared is recorded
    doc = api.get("/v1/documents", params={"path_prefix": "/mismatch/"}).json["data"][0]
    assert doc["status"] == "ready", doc
    assert doc["content_type"] == FILES["markitdown-test.docx"][0]
    assert doc["metadata"]["extracted"]["content_type_declared"] == "application/pdf"
    assert _search(api, "49e168b7-d2ae-407f-a055-2167576f39a1", "/mismatch/paper.pdf")


def test_a_text_posted_at_an_html_path_is_read_as_a_page_and_at_a_txt_path_as_text(api: ApiClient,
                                                                                    container: Container) -> None:
    # Given an HTML page posted as a text document under a .html path, and the same markup under .txt
    page = ("<html><head><title>Ferry notice</title><script>var tracker = 'hidden-script-word';</script></head>"
            "<body><nav>Home menu</nav><h1>Winter timetable</h1><p>The ferry to Vardø leaves at seven.</p></body></html>")
    for path in ("/posted/notice.html", "/posted/notice.txt"):
        r = api.post("/v1/documents", {"path": path, "content": page, "wait": True})
        assert r.status in (200, 201), r.json
    # Then the .html one is read as a page: its title, its text, no markup, no script
    html = api.get("/v1/documents", params={"path_prefix": "/posted/notice.html"}).json["data"][0]
    assert html["status"] == "ready" and html["content_type"] == "text/html" and html["title"] == "Ferry notice"
    chunks = _chunks(container, html["id"])
    assert any("The ferry to Vardø leaves at seven." in chunk for chunk in chunks)
    assert not [chunk for chunk in chunks if _MARKUP.search(chunk) or "hidden-script-word" in chunk]
    # And the .txt one stays the text it was posted as
    text = api.get("/v1/documents", params={"path_prefix": "/posted/notice.txt"}).json["data"][0]
    assert text["content_type"] == "text/plain" and "<script>" in "".join(_chunks(container, text["id"]))


def test_a_posted_text_is_read_as_its_declared_content_type(api: ApiClient, container: Container) -> None:
    page = ("<html><head><title>Tide table</title><script>var t = 'script-only-word';</script></head>"
            "<body><h1>Tides</h1><p>High water at Brest is at 14:05.</p></body></html>")
    # Given the page posted under a path without a telling extension, declared as HTML
    r = api.post("/v1/documents", {"path": "/posted/tides", "content": page, "content_type": "Text/HTML; charset=utf-8",
                                   "wait": True})
    assert r.status in (200, 201), r.json
    # Then it is read as a page: its text, no markup, no script
    assert r.json["status"] == "ready" and r.json["content_type"] == "text/html" and r.json["title"] == "Tide table"
    chunks = _chunks(container, r.json["id"])
    assert any("High water at Brest is at 14:05." in chunk for chunk in chunks)
    assert not [chunk for chunk in chunks if _MARKUP.search(chunk) or "script-only-word" in chunk]
    # And a type a posted text cannot be read as is a 422 naming the field
    bad = api.post("/v1/documents", {"path": "/posted/scan", "content": "x", "content_type": "application/pdf"})
    assert bad.status == 422 and bad.json["error"]["details"][0]["field"] == "content_type", bad.json
