"""The ingestion pipeline end to end on the real PostgreSQL, the real local model and the real
PDFs: S3-shaped event -> register -> extract -> chunk -> embed (Map) -> finalize / mark_failed,
executed by the local runner calling the Lambda handlers."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_engine.bootstrap import Container
from tests.conftest import shared_data
from tests.support.ingestion import upload_and_ingest
from tests.support.scans import blank_pdf


@pytest.fixture(scope="module")
def project_id(container: Container) -> str:
    return container.projects.get_or_create_project("acme").id


def _chunks(container: Container, document_id: str) -> list[dict]:  # type: ignore[type-arg]
    with container.database.connection() as conn:
        return conn.execute(
            "SELECT c.chunk_index, c.page, c.content, c.generation, c.embedding IS NOT NULL AS embedded"
            " FROM document_chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.document_id = %s AND c.generation = d.active_generation ORDER BY c.chunk_index",
            (document_id,),
        ).fetchall()


def _pdf(name: str) -> bytes:
    return Path(shared_data("pdfs", name)).read_bytes()


def test_lecture_script_ingests_page_by_page_and_is_searchable_by_page(container: Container, project_id: str) -> None:
    # Given the 117-page lecture script (with ligatures) dropped under the project's prefix
    data = _pdf("GeoTopo-komprimiert.pdf")
    # When the pipeline runs on its S3 event
    result = upload_and_ingest(container, project_id, "/lectures/geotopo.pdf", data)
    # Then the document is ready with 117 pages, one embedded chunk per page with text
    assert result.status == "succeeded", result.error
    print("seconds by step", result.seconds_by_step)
    doc = container.documents.find_by_path(project_id, "/lectures/geotopo.pdf")
    assert doc is not None and doc.status.value == "ready", doc
    assert doc.total_pages == 117 and doc.content_type == "application/pdf"
    chunks = _chunks(container, doc.id)
    assert len(chunks) == doc.total_chunks == doc.indexed_chunks
    assert len(chunks) >= 110 and all(c["embedded"] for c in chunks)
    assert {c["page"] for c in chunks} <= set(range(1, 118)) and chunks[0]["page"] == 1
    # ligatures are NFKC-normalized ("Auﬂage" -> "Auflage") so keyword search finds the words
    assert "Auflage" in chunks[0]["content"] and "\ufb02" not in chunks[0]["content"]
    # And a full-text query over the active chunks finds the page that talks about homotopy
    with container.database.connection() as conn:
        rows = conn.execute(
            "SELECT page FROM document_chunks WHERE document_id = %s"
            " AND search_tsv @@ websearch_to_tsquery('english', 'Homotopie') ORDER BY page",
            (doc.id,),
        ).fetchall()
    assert rows and all(1 <= r["page"] <= 117 for r in rows)
    # And the work objects were cleaned up
    assert not list((container.settings.home / "blobs" / "_work").rglob("*.json"))


@pytest.mark.parametrize("name", ["multicolumn.pdf", "habibi-arabic.pdf"])
def test_two_column_and_arabic_pdfs_ingest(container: Container, project_id: str, name: str) -> None:
    result = upload_and_ingest(container, project_id, f"/papers/{name}", _pdf(name))
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, f"/papers/{name}")
    assert doc is not None and doc.status.value == "ready"
    chunks = _chunks(container, doc.id)
    assert chunks and all(c["embedded"] for c in chunks)
    if name == "habibi-arabic.pdf":
        assert any("حَبيبي" in c["content"] or "habibi" in c["content"] for c in chunks)
    else:
        assert doc.total_pages == 3 and "Lorem" in " ".join(c["content"] for c in chunks)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("libreoffice-writer-password.pdf", ["encrypted", "password", "ingestion rule"]),
        ("c02-22-scanned.pdf", ["no text layer", "OCR"]),
    ],
)
def test_encrypted_and_scanned_pdfs_fail_with_errors_that_say_what_to_do(
    container: Container, project_id: str, name: str, expected: list[str]
) -> None:
    result = upload_and_ingest(container, project_id, f"/bad/{name}", _pdf(name))
    assert result.status == "failed"
    doc = container.documents.find_by_path(project_id, f"/bad/{name}")
    assert doc is not None and doc.status.value == "failed"
    assert doc.error and all(word.lower() in doc.error.lower() for word in expected), doc.error
    assert _chunks(container, doc.id) == []


def test_truncated_pdf_fails_as_unreadable(container: Container, project_id: str) -> None:
    data = _pdf("multicolumn.pdf")
    result = upload_and_ingest(container, project_id, "/bad/truncated.pdf", data[: len(data) // 3])
    doc = container.documents.find_by_path(project_id, "/bad/truncated.pdf")
    assert result.status == "failed" and doc is not None and doc.status.value == "failed"
    assert doc.error and ("corrupt" in doc.error or "no text" in doc.error.lower()), doc.error


def test_garbage_with_pdf_extension_fails_as_not_a_pdf(container: Container, project_id: str) -> None:
    result = upload_and_ingest(container, project_id, "/bad/garbage.pdf", b"this is not a pdf at all" * 10)
    doc = container.documents.find_by_path(project_id, "/bad/garbage.pdf")
    assert result.status == "failed" and doc is not None and doc.status.value == "failed"
    assert doc.error and "not a PDF" in doc.error


def test_blank_generated_pdf_fails_with_no_text_layer(container: Container, project_id: str) -> None:
    result = upload_and_ingest(container, project_id, "/bad/blank.pdf", blank_pdf())
    doc = container.documents.find_by_path(project_id, "/bad/blank.pdf")
    assert result.status == "failed" and doc is not None and doc.error and "no text layer" in doc.error


def test_unsupported_type_fails_and_names_the_fix(container: Container, project_id: str) -> None:
    result = upload_and_ingest(container, project_id, "/img/photo.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    doc = container.documents.find_by_path(project_id, "/img/photo.png")
    assert result.status == "failed" and doc is not None and doc.error
    assert "image/png" in doc.error and "ingestion rule" in doc.error


def test_markdown_file_ingests_as_one_page(container: Container, project_id: str) -> None:
    text = "# Title\n\nThe **engine** keeps facts.\n\n## Part\n\nMore text here."
    result = upload_and_ingest(container, project_id, "/notes/readme.md", text.encode())
    doc = container.documents.find_by_path(project_id, "/notes/readme.md")
    assert result.status == "succeeded" and doc is not None
    assert doc.content_type == "text/markdown" and doc.total_pages == 1
    assert [c["content"] for c in _chunks(container, doc.id)] == [text]
