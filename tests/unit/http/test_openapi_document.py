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
