"""The client and the engine's OpenAPI document agree (operations, fields, required fields, enum
values, nested models), and the comparison really fails when they do not."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from memory_engine.http.openapi import full_openapi_document
from tests.client.contract import compare_operations


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return copy.deepcopy(full_openapi_document())


def test_the_client_matches_the_openapi_document(document: dict[str, Any]) -> None:
    assert compare_operations(document) == []


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["components"]["schemas"]["Memory"]["properties"].pop("description"), "fields only in the client"),
    (lambda d: d["components"]["schemas"]["Synthesis"]["properties"].update({"tokens": {"type": "integer"}}),
     "only in the API ['tokens']"),
    (lambda d: d["components"]["schemas"]["EntryWriteResult"]["properties"]["action"].update(
        {"enum": ["created", "skipped", "merged", "superseded"]}), "values"),
    (lambda d: d["components"]["schemas"]["SearchRequest"].update({"required": ["query"]}), "required in the client"),
    (lambda d: d["paths"].update({"/v1/never": {"post": {"responses": {}}}}), "operations the client lacks"),
    (lambda d: d["components"]["schemas"]["Memory"]["properties"].pop("default_ttl"), "fields only in the client"),
    (lambda d: d["components"]["schemas"]["ForgetCounts"]["properties"].update({"files": {"type": "integer"}}),
     "only in the API ['files']"),
    (lambda d: d["paths"]["/v1/memories/import"]["post"]["requestBody"].update(
        {"content": {"text/csv": {"schema": {"type": "string"}}}}), "request media"),
    (lambda d: d["paths"]["/v1/memories/{memory_id}/export"]["get"]["responses"].update(
        {"200": {"description": "x", "content": {"text/csv": {"schema": {"type": "string"}}}}}), "response media"),
    (lambda d: d["paths"]["/v1/memories/{memory_id}"]["delete"]["responses"].pop("200"), "delete_memory: response"),
    (lambda d: d["paths"].pop("/v1/embeddings"), "client operations the API does not have"),
])
def test_a_disagreement_fails_the_check(document: dict[str, Any], mutate: Any, expected: str) -> None:
    changed = copy.deepcopy(document)
    mutate(changed)
    problems = compare_operations(changed)
    assert any(expected in p for p in problems), problems
