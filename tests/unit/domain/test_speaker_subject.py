"""A conversation turn written as "Speaker: text" (issue 35 section 2): the speaker named among its
entities becomes its subject; the context line does not repeat the name."""

from __future__ import annotations

from memory_engine.domain.entries import NewEntry, speaker_of, turn_text


def entry(content: str, *, subject: str | None = None, entities: tuple[str, ...] = ()) -> NewEntry:
    return NewEntry(memory_id="mem_1", content=content, subject=subject, entities=[{"name": n} for n in entities])


def test_a_speaker_prefix_naming_an_entity_makes_the_speaker_the_subject() -> None:
    assert entry("Caroline: I went to the support group", entities=("caroline",)).subject == "Caroline"


def test_a_subject_the_client_gave_is_kept() -> None:
    assert entry("Caroline: I went there", subject="Mel", entities=("Caroline", "Mel")).subject == "Mel"


def test_a_prefix_that_names_no_entity_is_left_alone() -> None:
    # "Note: ..." is not a speaker unless the client named "Note" as an entity
    assert entry("Note: buy milk", entities=("milk",)).subject is None
    assert entry("Caroline: hi").subject is None
    assert entry("no prefix here", entities=("Caroline",)).subject is None


def test_speaker_of_reads_only_a_short_name_before_a_colon() -> None:
    assert speaker_of("Melanie: yes, last Tuesday!") == "Melanie"
    assert speaker_of("at 10:30 we met") is None  # no space after the colon
    assert speaker_of("x" * 61 + ": text") is None
    assert speaker_of("line one\nBob: text") is None


def test_the_context_line_does_not_repeat_a_speaker_already_in_the_content() -> None:
    assert turn_text("Caroline", "Caroline: I went there") == "Caroline: I went there"
    assert turn_text("Caroline", "I went there") == "Caroline: I went there"
    assert turn_text(None, "Caroline: I went there") == "Caroline: I went there"
