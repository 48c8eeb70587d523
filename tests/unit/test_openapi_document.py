"""The OpenAPI document is kept in the repo (SPEC) and must match the routes in the code."""

from __future__ import annotations

from pathlib import Path

from memory_engine.cli.openapi import render

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_committed_openapi_document_matches_the_code() -> None:
    assert COMMITTED.read_text() == render(), "docs/openapi.json is stale: run `memory-engine openapi --write docs/openapi.json`"
