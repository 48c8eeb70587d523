"""OCR through the real local pipeline: an ``ocr`` ingestion rule, Tesseract (installed by this
module's setup when it is missing and the run may install it), the real database and model.

A scanned PDF (an image of text, no text layer, stored with the CCITT fax codec) and a PNG become
``ready`` and searchable by a phrase that exists only in their pixels; a PDF with a text layer is
read natively and only its scanned page goes to OCR."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader, PdfWriter

from memory_engine.adapters.ocr.tesseract import TesseractOcr
from memory_engine.local.container import LocalContainer
from tests.conftest import shared_data
from tests.support.api_client import ApiClient
from tests.support.ingestion import upload_and_ingest
from tests.support.rules import admin_fixture, clean_rules_fixture, reader_fixture  # noqa: F401 - fixtures
from tests.support.scans import png, scanned_pdf

PROJECT = "ocr"
PHRASE = ("Purple tomatoes ripen in late August", "near the northern greenhouse.")


@pytest.fixture(scope="module", autouse=True)
def tesseract() -> str:
    """The Tesseract binary; installed with apt-get when missing on CI or as root, else skipped."""
    if shutil.which("tesseract") is None and (os.environ.get("CI") == "true" or os.geteuid() == 0):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-qq", "tesseract-ocr"], check=False, env=env,
                       capture_output=True, timeout=900)
    found = shutil.which("tesseract")
    if found is None:
        pytest.skip("Tesseract is not installed (apt-get install tesseract-ocr) and this run may not install it "
                    "(neither CI=true nor root)")
    return found


@pytest.fixture(scope="module")
def project_id(container: LocalContainer) -> str:
    # the composition root found the binary: the local engine's OCR is Tesseract
    assert isinstance(container.ingestion_ports.ocr, TesseractOcr)
    return container.projects.get_or_create_project(PROJECT).id


def _ocr_rule(admin: ApiClient, glob: str, **extra: Any) -> None:
    r = admin.post("/v1/ingestion-rules", {"content_type_glob": glob, "converter": {"type": "ocr"}, **extra})
    assert r.status == 201, r.json


def _found(reader: ApiClient, query: str, path: str) -> list[dict[str, Any]]:
    r = reader.post("/v1/knowledge/search", {"query": query, "document_paths": [path]})
    assert r.status == 200, r.json
    return list(r.json["results"])


def test_a_scanned_pdf_becomes_ready_and_searchable_by_a_phrase_only_its_pixels_hold(
        container: LocalContainer, admin: ApiClient, reader: ApiClient, project_id: str) -> None:
    # Given an ocr rule for PDFs with native extraction first, and a one-page scan without a text layer
    _ocr_rule(admin, "application/pdf", native_extraction="first")
    data = scanned_pdf(*PHRASE)
    assert not "".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages).strip()
    # When it is uploaded
    result = upload_and_ingest(container, project_id, "/scans/tomatoes.pdf", data, content_type="application/pdf")
    # Then it is ready, its page holds the recognised text, and a search for the phrase finds it
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, "/scans/tomatoes.pdf")
    assert doc is not None and doc.status.value == "ready" and doc.total_pages == 1
    hits = _found(reader, "purple tomatoes ripen in late August", "/scans/")
    assert hits and hits[0]["document_id"] == doc.id
    assert "Purple tomatoes ripen" in hits[0]["content"] and "northern greenhouse" in hits[0]["content"]


def test_an_image_upload_goes_to_ocr_directly(
        container: LocalContainer, admin: ApiClient, reader: ApiClient, project_id: str) -> None:
    # Given an ocr rule for PNG images
    _ocr_rule(admin, "image/png")
    # When a PNG of text is uploaded
    result = upload_and_ingest(container, project_id, "/photos/board.png", png("Quarterly budget review moved",
                                                                                "to Thursday morning."),
                               content_type="image/png")
    # Then it is ready and found by what the picture says
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, "/photos/board.png")
    assert doc is not None and doc.status.value == "ready"
    hits = _found(reader, "when is the quarterly budget review", "/photos/")
    assert hits and hits[0]["document_id"] == doc.id and "Thursday morning" in hits[0]["content"]


def test_a_pdf_with_a_text_layer_is_read_natively_and_only_its_scanned_page_goes_to_ocr(
        container: LocalContainer, admin: ApiClient, reader: ApiClient, project_id: str) -> None:
    # Given the three-page two-column paper (a text layer) with a scanned page appended
    _ocr_rule(admin, "application/pdf", native_extraction="first")
    writer = PdfWriter()
    for source in (Path(shared_data("pdfs", "multicolumn.pdf")).read_bytes(), scanned_pdf(*PHRASE)):
        for page in PdfReader(io.BytesIO(source)).pages:
            writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    ocr = container.ingestion_ports.ocr
    assert isinstance(ocr, TesseractOcr)
    calls: list[str] = []
    original = ocr.read
    ocr.read = lambda image, suffix, name: calls.append(name) or original(image, suffix, name)  # type: ignore[method-assign]
    try:
        # When it is uploaded
        result = upload_and_ingest(container, project_id, "/papers/mixed.pdf", out.getvalue(),
                                   content_type="application/pdf")
    finally:
        del ocr.read
    # Then it is ready with four pages: OCR read the fourth page only, the others came from the text layer
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, "/papers/mixed.pdf")
    assert doc is not None and doc.status.value == "ready" and doc.total_pages == 4
    assert calls == ["/papers/mixed.pdf page 4"]
    with container.database.connection() as conn:
        pages = {r["page"]: r["content"] for r in conn.execute(
            "SELECT c.page, c.content FROM document_chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.document_id = %s AND c.generation = d.active_generation", (doc.id,)).fetchall()}
    assert "Two-Column Document" in pages[1] and "Purple tomatoes ripen" in pages[4]


def test_a_real_scan_with_a_jpeg_page_is_read(container: LocalContainer, admin: ApiClient, reader: ApiClient,
                                              project_id: str) -> None:
    # Given the real scanned page (a DCT image, no text layer) that fails without a rule
    _ocr_rule(admin, "application/pdf")
    data = Path(shared_data("pdfs", "c02-22-scanned.pdf")).read_bytes()
    # When it is uploaded under the ocr rule
    result = upload_and_ingest(container, project_id, "/scans/c02-22.pdf", data, content_type="application/pdf")
    # Then it is ready and its story is searchable
    assert result.status == "succeeded", result.error
    hits = _found(reader, "tip-toeing along a path amongst the trees", "/scans/c02-22.pdf")
    assert hits and "garden" in hits[0]["content"]
