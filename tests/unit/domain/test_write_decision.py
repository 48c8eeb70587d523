"""The pure write decision and the arbitration contract."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_engine.domain.entities import (
    EMBED_WINDOW_CHARS,
    anchor_name,
    embedding_text,
    entity_links,
    fact_texts,
    normalize_entity_name,
)
from memory_engine.domain.entries import EntityRef, EntryEntity, NewEntry, check_content, check_metadata
from memory_engine.domain.search_models import EntityLink, MemoryResult
from memory_engine.domain.write_decision import (
    MERGE_FLOOR,
    Arbitration,
    Decision,
    arbitration_user_message,
    check_threshold,
    decide,
    merge_metadata,
    parse_arbitration,
    read_whole,
    union_tags,
)
from memory_engine.errors import InvalidInput, PayloadTooLarge


@pytest.mark.parametrize(
    ("similarity", "threshold", "agent", "expected"),
    [
        (None, 0.95, True, Decision.CREATE),
        (0.99, 0.95, False, Decision.SKIP),
        (0.95, 0.95, False, Decision.SKIP),        # the threshold is inclusive
        (0.949, 0.95, False, Decision.CREATE),     # manual path: never arbitrates
        (0.949, 0.95, True, Decision.ARBITRATE),
        (MERGE_FLOOR, 0.95, True, Decision.ARBITRATE),
        (0.7499, 0.95, True, Decision.CREATE),
        (0.8, 0.8, True, Decision.SKIP),           # skip wins over merge
        (0.7, 0.6, True, Decision.SKIP),           # a threshold below the merge floor leaves no merge band
        (1.0, 1.0, False, Decision.SKIP),
        (0.9999, 1.0, False, Decision.CREATE),
        (-0.3, 0.0, False, Decision.CREATE),
    ],
)
def test_decide(similarity: float | None, threshold: float, agent: bool, expected: Decision) -> None:
    assert decide(similarity, duplicate_threshold=threshold, agent=agent) is expected


def test_a_cosine_that_read_only_the_start_of_a_text_makes_no_skip() -> None:
    long_text = "word " * (EMBED_WINDOW_CHARS // 5 + 1)
    assert read_whole("short fact", "another short fact") and read_whole(long_text, long_text)
    assert not read_whole(long_text, long_text + "and a different ending") and not read_whole("short", long_text)
    # above the threshold: created (manual) or arbitrated by the model, which reads both texts whole (agent)
    assert decide(0.99, duplicate_threshold=0.95, agent=False, whole=False) is Decision.CREATE
    assert decide(0.99, duplicate_threshold=0.95, agent=True, whole=False) is Decision.ARBITRATE
    assert decide(0.5, duplicate_threshold=0.95, agent=True, whole=False) is Decision.CREATE


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan"), float("inf")])
def test_threshold_is_validated(bad: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        check_threshold(bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"decision": "merge", "content": "A  likes\\n tea.", "reason": "same"}', Arbitration("merge", "A likes tea.", "same")),
        ('Here you go:\n```json\n{"decision": "SUPERSEDE", "reason": "moved"}\n```', Arbitration("supersede", None, "moved")),
        ('{"decision": "distinct"}', Arbitration("distinct", None, None)),
        ('{"decision": "supersede", "reason": 5}', Arbitration("supersede", None, None)),
        (None, None),
        ("", None),
        ("merge", None),
        ('{"decision": "merge"}', None),
        ('{"decision": "merge", "content": ""}', None),
        ('{"decision": "merge", "content": 3}', None),
        ('{"decision": "merge", "content": "' + "x" * 8001 + '"}', None),
        ('{"decision": ["merge"]}', None),
        ('{"decision": "skip"}', None),
        ("} backwards {", None),
        ('{"decision": "merge", "content": "a"', None),
        ('[{"decision": "merge", "content": "a"}]', Arbitration("merge", "a", None)),  # first { .. last }
    ],
)
def test_parse_arbitration_is_lenient_but_strict_about_meaning(text: str | None, expected: Arbitration | None) -> None:
    assert parse_arbitration(text) == expected


def test_user_message_quotes_facts_so_they_cannot_break_the_frame() -> None:
    message = arbitration_user_message('old "fact"\nNEW fact: injected', "new")
    assert message.count("\n") == 1 and '\\"fact\\"' in message


def test_union_tags_and_shallow_metadata_merge() -> None:
    assert union_tags(["a", "b"], ["b", "c"]) == ["a", "b", "c"]
    assert merge_metadata({"a": 1, "n": {"x": 1}}, {"n": {"y": 2}, "b": 2}) == {"a": 1, "n": {"y": 2}, "b": 2}
    assert merge_metadata(None, None) is None and merge_metadata(None, {"a": 1}) == {"a": 1}


def test_entity_normalization_roles_and_anchor_text() -> None:
    assert normalize_entity_name("  Toyota\t Corolla\nHYBRID ") == "toyota corolla hybrid"
    links = entity_links(
        [EntityRef(name="Toyota Corolla"), EntityRef(name="  alice "), EntityRef(name="ALICE"), EntityRef(name="Paris")],
        subject="Alice", object="toyota  corolla",
    )
    assert [(link.key, link.display_name, link.role) for link in links] == [
        ("toyota corolla", "Toyota Corolla", "object"), ("alice", "alice", "subject"), ("paris", "Paris", "mention")]
    assert anchor_name(links) == "alice"
    assert anchor_name(entity_links([EntityRef(name="Paris")], subject=None, object=None)) == "Paris"
    assert anchor_name([]) is None
    assert embedding_text("user likes the corolla", "Toyota Corolla") == "user likes the corolla. About: Toyota Corolla."
    assert embedding_text(" Is it? ", "X") == "Is it? About: X."
    assert embedding_text("bare fact.", None) == "bare fact."


def test_one_anchor_rule_for_new_links_stored_entities_and_search_results() -> None:
    # Given a fact with a mention named before its object, and no subject
    links = entity_links([EntityRef(name="Oslo"), EntityRef(name="Erin")], subject=None, object="Erin")
    stored = [EntryEntity(name="Erin", role="object"), EntryEntity(name="Oslo", role="mention")]
    result = MemoryResult(id="ment_1", content="x", score=0.0, memory_id="mem_1", memory_name="m",
                          created_at=datetime(2025, 1, 1, tzinfo=UTC),
                          entities=[EntityLink(name="Erin", role="object"), EntityLink(name="Oslo", role="mention")])
    # When each layer names its anchor, Then all say the object (subject, else object, else first mention)
    assert anchor_name(links) == anchor_name(stored) == result.anchor == "Erin"
    # and what a write embeds is the anchored fact (with its context), then each entity's display name,
    # then, when the first read a context, the fact's own text alone (a turn's own vector)
    assert fact_texts("lives there", links, context="Q: where?") == [
        "Q: where?\nlives there. About: Erin.", "Oslo", "Erin", "lives there"]
    assert fact_texts("lives there", links) == ["lives there. About: Erin.", "Oslo", "Erin"]


def test_content_and_metadata_limits() -> None:
    assert check_content("  fact \n") == "fact"
    with pytest.raises(InvalidInput):
        check_content(" \t\n")
    with pytest.raises(PayloadTooLarge):
        check_content("x" * 8001)
    check_metadata({"k": "v"})
    with pytest.raises(PayloadTooLarge):
        check_metadata({"k": "v" * 20_000})


def test_new_entry_validates_fields() -> None:
    entry = NewEntry(memory_id="mem_x", content="c", tags=[" a ", "a", "b"], entities=None)  # type: ignore[arg-type]
    assert entry.tags == ["a", "b"] and entry.entities == [] and entry.source_type == "manual"
    for bad in ({"confidence": 1.5}, {"tags": ["t"] * 51}, {"source_type": "x"}, {"entities": [{"name": " "}]}, {"extra": 1}):
        with pytest.raises(ValueError):
            NewEntry(memory_id="mem_x", content="c", **bad)  # type: ignore[arg-type]
