"""The shared storage-safety rules (domain.validation) and the models that use them (issue 11)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from memory_engine.domain.documents import normalize_path
from memory_engine.domain.entries import MemoryEntry, NewEntry
from memory_engine.domain.events import TurnCompletedEvent
from memory_engine.domain.requests import CreateTextDocument, MemoryFields, UploadRequest
from memory_engine.domain.search_models import SearchRequest
from memory_engine.domain.validation import (
    CLIPPED,
    MAX_BODY_DEPTH,
    MAX_JSON_DEPTH,
    json_structure,
    json_text_too_deep,
    project_name,
    readable_json,
    scrub_text,
)
from memory_engine.services.memories import EntryReplacement
from tests.support.extraction import turn_event


def nested(levels: int) -> dict[str, object]:
    """``{"a": {"a": ... {}}}`` with ``levels`` objects."""
    value: dict[str, object] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def _fields(error: ValidationError) -> list[str]:
    return [".".join(str(p) for p in e["loc"]) for e in error.errors()]


# --- 1. nesting depth ---------------------------------------------------------------------------
@pytest.mark.parametrize("model", [MemoryFields, EntryReplacement])
def test_metadata_at_the_depth_limit_passes_and_one_deeper_is_rejected(model: type) -> None:
    model(metadata=nested(MAX_JSON_DEPTH))
    with pytest.raises(ValidationError) as caught:
        model(metadata=nested(MAX_JSON_DEPTH + 1))
    assert _fields(caught.value) == ["metadata"] and f"deeper than {MAX_JSON_DEPTH}" in str(caught.value)


def test_every_write_model_rejects_deep_metadata() -> None:
    deep = nested(300)
    for build in (
        lambda: NewEntry(memory_id="mem_1", content="a fact", metadata=deep),
        lambda: CreateTextDocument(path="/a.md", content="text", metadata=deep),
        lambda: UploadRequest(path="/a.pdf", metadata={"list": [deep]}),
    ):
        with pytest.raises(ValidationError, match="nested deeper"):
            build()


def test_a_stored_deep_value_reads_back_clipped_instead_of_failing() -> None:
    # Given a row stored before the limit existed, 300 levels deep (pydantic cannot serialize past ~255)
    row = {"id": "m", "project_id": "p", "name": "n", "description": None, "tags": [], "metadata": nested(300),
           "created_at": datetime.now(UTC), "updated_at": datetime.now(UTC)}
    from memory_engine.domain.entries import Memory

    # When it is read and serialized, Then it serializes, cut at the limit with a marker
    dumped = Memory(**row).model_dump(mode="json")
    text = json.dumps(dumped)
    assert CLIPPED in text and text.count("{") <= MAX_JSON_DEPTH + 2
    # and shallow values pass through untouched (same object)
    shallow = {"a": [1, {"b": 2}]}
    assert readable_json(shallow) is shallow
    assert MemoryEntry.model_fields["metadata"].annotation is not None


def test_body_depth_scan_ignores_brackets_inside_strings_and_escapes() -> None:
    assert not json_text_too_deep(json.dumps({"content": "[" * 500 + '\\"{' * 200}))
    assert json_text_too_deep('{"a":' * (MAX_BODY_DEPTH + 1) + "1" + "}" * (MAX_BODY_DEPTH + 1))
    assert not json_text_too_deep(json.dumps([[1]] * 1000))  # wide, not deep


# --- 2. values PostgreSQL cannot hold ------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"content": "a\x00b"}, "content"),
        ({"content": "ok", "tags": ["t\x00"]}, "tags.0"),
        ({"content": "ok", "entities": [{"name": "Ann\x00"}]}, "entities.0.name"),
        ({"content": "ok", "subject": "x\x00"}, "subject"),
        ({"content": "ok", "metadata": {"k\x00": 1}}, "metadata"),
        ({"content": "ok", "metadata": {"k": ["v\x00"]}}, "metadata"),
        ({"content": "ok", "metadata": {"k": "\ud800"}}, "metadata"),
        ({"content": "\udfff lone"}, "content"),
        ({"content": "ok", "metadata": {"k": float("inf")}}, "metadata"),
        ({"content": "ok", "valid_from": "9999-12-31T23:59:59-12:00"}, "valid_from"),
        ({"content": "ok", "valid_to": "0001-01-01T00:00:00+01:00"}, "valid_to"),
    ],
)
def test_new_entry_rejects_unstorable_values_naming_the_field(fields: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        NewEntry(memory_id="mem_1", **fields)  # type: ignore[arg-type]
    assert field in _fields(caught.value)


def test_naive_and_in_range_timestamps_are_kept_aware() -> None:
    entry = NewEntry(memory_id="mem_1", content="ok", valid_from="9999-12-31T23:59:59Z", valid_to="9999-12-31T23:59:59")  # type: ignore[arg-type]
    assert entry.valid_to is not None and entry.valid_to.tzinfo is not None


def test_search_and_events_reject_nul_and_out_of_range_times() -> None:
    with pytest.raises(ValidationError) as caught:
        SearchRequest(query="hello\x00", memory_ids=["mem\x00"], as_of="9999-12-31T23:59:59-12:00")  # type: ignore[arg-type]
    assert set(_fields(caught.value)) == {"query", "memory_ids.0", "as_of"}
    event = turn_event(project_id="proj_1", memory_id="mem_1",
                       messages=[{"role": "user", "content": "I live in \x00 Lisbon"}])
    with pytest.raises(ValidationError) as caught:
        TurnCompletedEvent.model_validate(event)
    assert _fields(caught.value) == ["detail.messages.0.content"]
    late = turn_event(project_id="proj_1", memory_id="mem_1", occurred_at="9999-12-31T23:59:59-12:00")
    with pytest.raises(ValidationError):
        TurnCompletedEvent.model_validate(late)


def test_file_text_is_scrubbed_not_rejected() -> None:
    assert scrub_text("a\x00b\ud800c") == "ab\ufffdc"


# --- 3. paths ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    ["/" + "a" * 300 + ".md", "/docs/" + "é" * 128 + "/x.md", "a//b.md", "/a/\nb.md", "/.meta/x.md", "/a/./b",
     "/a/../b", "/a\x00b.md", "/\ud800.md", "/x/" * 400],
)
def test_the_one_path_rule_rejects(path: str) -> None:
    with pytest.raises(ValueError):
        normalize_path(path)
    with pytest.raises(ValidationError) as caught:
        CreateTextDocument(path=path, content="text")
    assert _fields(caught.value) == ["path"]


def test_a_segment_of_exactly_255_bytes_is_accepted() -> None:
    assert normalize_path("docs/" + "a" * 252 + ".md") == "/docs/" + "a" * 252 + ".md"


# --- 4. project names ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["x/../proja", "..", ".hidden", "", "Acme", "a b", "a" * 65, "a\x00"])
def test_project_names_are_slugs(name: str) -> None:
    with pytest.raises(ValueError, match="invalid project name"):
        project_name(name)


def test_cli_keys_create_refuses_a_project_name_with_path_segments(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from memory_engine.cli.keys import run_create

    assert run_create(argparse.Namespace(project="x/../proja", scopes="read,write", name=None)) == 2
    assert "invalid project name" in capsys.readouterr().err


# --- 10. one validity-window rule ----------------------------------------------------------------
@pytest.mark.parametrize("model", [EntryReplacement, lambda **kw: NewEntry(memory_id="m", content="c", **kw)])
def test_post_and_put_share_the_validity_window_rule(model: object) -> None:
    with pytest.raises(ValidationError, match="valid_to must not be before valid_from"):
        model(valid_from="2024-02-01T00:00:00Z", valid_to="2024-01-01T00:00:00Z")  # type: ignore[operator]


def test_json_structure_sees_brackets_and_commas_outside_strings_only() -> None:
    # Given JSON whose string holds brackets, a comma and an escaped quote
    text = '[{"a": "x,]\\"{"}, 1]'
    # When its structure is read, Then only the real brackets and commas come out, with their positions
    found = list(json_structure(text))
    assert [ch for _, ch in found] == ["[", "{", "}", ",", "]"]
    assert all(text[at] == ch for at, ch in found)
