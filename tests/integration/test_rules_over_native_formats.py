"""Ingestion rules still win over the built-in extractors of issue 37: a rule with
``native_extraction: skip`` for a format the engine reads itself (Word here, the real dev file) sends
it to the user's converter instead; with ``first`` (the default) the built-in reads it and the
converter takes only what the built-in cannot read (a damaged or password-protected file)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memory_engine.domain import content_types as ct
from memory_engine.local.container import LocalContainer
from tests.conftest import shared_data
from tests.support import hostile
from tests.support.api_client import ApiClient
from tests.support.converter import FIXED_TEXT, ConverterService, allowing_converters, converter_service
from tests.support.ingestion import upload_and_ingest
from tests.support.rules import admin_fixture, clean_rules_fixture, reader_fixture  # noqa: F401 - fixtures

PROJECT = "rules-native"
DOCX_PHRASE = "AutoGen is an open-source framework"


@pytest.fixture(scope="module")
def converter(container: LocalContainer) -> Iterator[ConverterService]:
    # the stub listens on 127.0.0.1: allowed as the operator would with CONVERTER_ALLOWED_HOSTS
    with converter_service() as service, allowing_converters(container, service.host_port):
        yield service


@pytest.fixture(scope="module")
def project_id(container: LocalContainer, admin: ApiClient) -> str:
    return container.projects.get_or_create_project(PROJECT).id


def _rule(admin: ApiClient, url: str, **extra: Any) -> dict[str, Any]:
    r = admin.post("/v1/ingestion-rules", {"content_type_glob": ct.DOCX, "converter": {"type": "http", "url": url},
                                           **extra})
    assert r.status == 201, r.json
    return dict(r.json)


def _chunks(container: LocalContainer, document_id: str) -> list[str]:
    with container.database.connection() as conn:
        rows = conn.execute("SELECT c.content FROM document_chunks c JOIN documents d ON d.id = c.document_id"
                            " WHERE c.document_id = %s AND c.generation = d.active_generation ORDER BY c.chunk_index",
                            (document_id,)).fetchall()
    return [row["content"] for row in rows]


def _docx() -> bytes:
    return shared_data("formats", "markitdown-test.docx").read_bytes()


def test_a_rule_with_skip_sends_a_word_file_to_the_users_converter_not_the_built_in(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str) -> None:
    # Given a rule for Word files to the user's converter, native extraction skipped
    rule = _rule(admin, converter.url("/fixed"), native_extraction="skip")
    # When a real .docx is ingested
    result = upload_and_ingest(container, project_id, "/skip/report.docx", _docx())
    # Then the converter read it: its text is the document's, the built-in's is not
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, "/skip/report.docx")
    assert doc is not None and doc.status.value == "ready" and doc.ingestion_rule_id == rule["id"]
    assert converter.last()["body"]["content_type"] == ct.DOCX
    chunks = _chunks(container, doc.id)
    assert chunks == [FIXED_TEXT]


def test_a_rule_with_first_lets_the_built_in_read_and_converts_only_what_it_cannot(
        container: LocalContainer, admin: ApiClient, converter: ConverterService, project_id: str) -> None:
    # Given a rule for Word files with the default native_extraction (first)
    rule = _rule(admin, converter.url("/fixed"))
    assert rule["native_extraction"] == "first"
    before = len(converter.requests)
    # When a readable .docx is ingested, Then the built-in reads it and the converter is not called
    result = upload_and_ingest(container, project_id, "/first/report.docx", _docx())
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(project_id, "/first/report.docx")
    assert doc is not None and any(DOCX_PHRASE in chunk for chunk in _chunks(container, doc.id))
    assert len(converter.requests) == before
    # And a password-protected one, which the built-in cannot read, goes to the converter
    result = upload_and_ingest(container, project_id, "/first/locked.docx", hostile.encrypted_office())
    assert result.status == "succeeded", result.error
    locked = container.documents.find_by_path(project_id, "/first/locked.docx")
    assert locked is not None and _chunks(container, locked.id) == [FIXED_TEXT]
    assert len(converter.requests) == before + 1
