"""The OpenAPI document is kept in the repo (SPEC), must match the routes in the code, and is what
``GET /v1/openapi.json`` serves (package data, so the Lambda layer carries it)."""

from __future__ import annotations

import json
from pathlib import Path

from memory_engine.cli.openapi import render
from memory_engine.http.health import committed_openapi_document, deployed_openapi_document

COMMITTED = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"


def test_committed_openapi_document_matches_the_code() -> None:
    assert COMMITTED.read_text() == render(), "docs/openapi.json is stale: run `make openapi`"


def test_the_served_document_is_the_committed_one() -> None:
    import memory_engine.http

    package_copy = Path(memory_engine.http.__file__).parent / "openapi.json"
    assert COMMITTED.resolve() == package_copy.resolve(), "docs/openapi.json must link to the package data"
    assert committed_openapi_document() == json.loads(COMMITTED.read_text())


def test_the_document_served_on_aws_leaves_out_the_local_only_routes() -> None:
    committed, deployed = committed_openapi_document(), deployed_openapi_document()
    local_only = {"/v1/events", "/v1/local-uploads/{token}", "/v1/local-downloads/{token}"}
    # Given a committed document that lists the local engine's own routes
    assert local_only <= set(committed["paths"])
    # Then the document API Gateway's API serves has every other route, unchanged, and not those
    assert set(committed["paths"]) - set(deployed["paths"]) == local_only
    assert all(deployed["paths"][p] == committed["paths"][p] for p in deployed["paths"])
    assert committed_openapi_document() == json.loads(COMMITTED.read_text())  # the cached original untouched


def test_every_path_parameter_states_what_it_can_be() -> None:
    # issue 34 defect 11: the document describes what the API takes, path parameters included
    import re
    from datetime import UTC, datetime

    from memory_engine import ids
    from memory_engine.domain.converter_protocol import sign_callback_token
    from memory_engine.domain.upload_tokens import sign_upload_token

    later = datetime(2100, 1, 1, tzinfo=UTC)
    real = {
        "memory_id": ids.new_id(ids.MEMORY), "entry_id": ids.new_id(ids.ENTRY),
        "document_id": ids.new_id(ids.DOCUMENT), "rule_id": ids.new_id(ids.RULE),
        "turn_id": ["t-2", "call_9f8e 7d6c", "2026-12-04T10:00:00Z#user"],
        "token": [sign_upload_token(b"k" * 32, key="projects/p/a.md", project_id="proj_x", expires_at=later),
                  sign_callback_token(b"k" * 32, project_id="proj_x", document_id="doc_x", generation=1,
                                      expires_at=later)],
    }
    parameters = [(path, p) for path, item in committed_openapi_document()["paths"].items()
                  for operation in item.values() for p in operation.get("parameters", []) if p["in"] == "path"]
    assert {p["name"] for _, p in parameters} == set(real)
    for path, parameter in parameters:
        pattern = parameter["schema"].get("pattern")
        assert pattern and parameter.get("description"), (path, parameter)
        values = real[parameter["name"]]
        for value in values if isinstance(values, list) else [values]:
            assert re.search(pattern, value), (path, parameter["name"], value)
        assert not re.search(pattern, "x\u0011y") and not re.search(pattern, "")


def test_rules_the_schema_cannot_state_are_in_the_operations_descriptions() -> None:
    # issue 34 defect 11: cross-field rules, opaque cursors and grammars are described, not left out
    from memory_engine.http.openapi import RULES_BEYOND_THE_SCHEMA

    paths = committed_openapi_document()["paths"]
    for label, rule in RULES_BEYOND_THE_SCHEMA.items():
        method, path = label.split(" ", 1)
        assert rule in paths[path][method.lower()]["description"], label
    assert "chunk_overlap` must be smaller than `chunk_size" in RULES_BEYOND_THE_SCHEMA["POST /v1/documents"]
