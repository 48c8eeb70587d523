"""replace_entry with fakes of its ports: the validity window over the stored bound, and what a
re-embedded fact embeds (the one anchor rule)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_engine.domain.entries import EntryEntity
from memory_engine.errors import InvalidInput
from memory_engine.services.memories import EntryReplacement, replace_entry
from tests.unit.services.fakes import NOW, FakeEmbedder, FakeEntries, stored_entry


def test_valid_to_before_the_stored_valid_from_is_rejected_and_nothing_is_written() -> None:
    # Given an entry valid from NOW
    entries = FakeEntries(stored_entry(valid_from=NOW))
    # When a replacement moves valid_to before it
    with pytest.raises(InvalidInput) as raised:
        replace_entry(entries, FakeEmbedder(), "proj_1", "ment_1",
                      EntryReplacement(valid_to=NOW - timedelta(days=1)))
    # Then it is a 422 on valid_to and the repository was not asked to replace
    assert raised.value.details == [{"field": "valid_to"}]
    assert entries.changes == []


def test_new_content_is_embedded_with_the_entrys_anchor_and_entity_names() -> None:
    # Given an entry whose object is Erin and which mentions Oslo
    entries = FakeEntries(stored_entry(entities=[EntryEntity(name="Erin", role="object"),
                                                 EntryEntity(name="Oslo", role="mention")], object="Erin"))
    embedder = FakeEmbedder()
    # When its content is replaced
    replace_entry(entries, embedder, "proj_1", "ment_1", EntryReplacement(content="Erin moved to Bergen."))
    # Then the fact is embedded about its object, then each entity's name, and all are handed over
    assert sorted(embedder.texts) == ["Erin", "Erin moved to Bergen. About: Erin.", "Oslo"]  # batched by length
    (changes,) = entries.changes
    assert changes.reembed and changes.embedding is not None
    assert changes.entity_vectors is not None and set(changes.entity_vectors.by_key) == {"erin", "oslo"}
