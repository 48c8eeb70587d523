"""The context embedded with a fact takes only the room the fact leaves in the model's window
(issue 35 section 3a): a long previous turn no longer pushes the fact out of what the model reads."""

from __future__ import annotations

import itertools

from memory_engine.domain.entities import EMBED_WINDOW_CHARS, MIN_CONTEXT_CHARS, embedding_text, keeps_own_vector, own_text
from memory_engine.domain.entries import turn_speaker
from memory_engine.domain.turns import MAX_TURN_BYTES, WINDOW_OVERLAP_CHARS, window_spans


def test_a_short_turn_keeps_its_whole_previous_turn() -> None:
    assert embedding_text("Yes, last Tuesday!", "Mel", context="Mel: when did you go?") == \
        "Mel: when did you go?\nYes, last Tuesday! About: Mel."


def test_a_turn_is_embedded_as_its_transcript_line_like_its_context() -> None:
    # a turn's speaker is its subject (written in a conversation, not extracted from one)
    assert turn_speaker("Caroline", "conv-1", "manual") == "Caroline"
    assert turn_speaker("Caroline", None, "manual") is None and turn_speaker("Caroline", "conv-1", "extraction") is None
    assert embedding_text("Yes, last Tuesday!", "Caroline", context="Mel: when did you go?", speaker="Caroline") == \
        "Mel: when did you go?\nCaroline: Yes, last Tuesday! About: Caroline."
    # the first turn of a conversation too, and a turn written as "<speaker>: <text>" is not named twice
    assert embedding_text("Hi Mel!", "Caroline", speaker="Caroline") == "Caroline: Hi Mel! About: Caroline."
    assert embedding_text("Caroline: Hi Mel!", "Caroline", speaker="Caroline") == "Caroline: Hi Mel! About: Caroline."
    # its own text (the second vector, the funnel's decision) is what it says alone
    assert own_text("Yes, last Tuesday!", "Caroline", context="Mel: when did you go?", speaker="Caroline") == \
        "Yes, last Tuesday!"


def test_a_long_previous_turn_is_cut_to_its_end_and_the_fact_comes_whole() -> None:
    long_before = "start " + "word " * 400 + "the part right before"
    text = embedding_text("so we deploy on fridays", "team", context=long_before)
    assert text.endswith("\nso we deploy on fridays. About: team.")
    assert len(text) <= EMBED_WINDOW_CHARS
    assert "the part right before" in text and not text.startswith("start")


def test_a_fact_that_fills_the_window_is_embedded_alone() -> None:
    fact = "x " * EMBED_WINDOW_CHARS
    assert embedding_text(fact, None, context="the turn before") == fact.strip()


def test_a_turn_keeps_a_vector_of_its_own_text_only_where_its_context_was_cut_to_fit() -> None:
    # a previous turn that fits whole: the one vector reads both turns whole (LoCoMo's short turns);
    # the own text is still embedded, for the write funnel's decision
    assert own_text("Yes, last Tuesday!", "Mel", context="Mel: when did you go?") == "Yes, last Tuesday!"
    assert not keeps_own_vector("Yes, last Tuesday!", "Mel", context="Mel: when did you go?")
    # a long previous turn cut to the room left: the vector is mostly a fragment of it (BEAM)
    assert own_text(" so we deploy on fridays ", "team", context="word " * 400) == "so we deploy on fridays"
    assert keeps_own_vector(" so we deploy on fridays ", "team", context="word " * 400)
    # no context read (none, or too short once cut): the one vector is the fact's own
    assert own_text("so we deploy on fridays", None, context=None) is None
    fact = "x " * ((EMBED_WINDOW_CHARS - MIN_CONTEXT_CHARS) // 2 + 1)
    assert embedding_text(fact, None, context="word " * 400) == fact.strip()
    assert own_text(fact, None, context="word " * 400) is None
    assert not keeps_own_vector(fact, None, context="word " * 400)


def test_an_episodes_windows_cover_the_whole_turn_each_the_models_size_overlapping_a_little() -> None:
    assert window_spans("") == [] and window_spans("user: hi") == [(0, 8)]
    for length in (EMBED_WINDOW_CHARS, EMBED_WINDOW_CHARS + 1, 4_321, MAX_TURN_BYTES + 6):
        spans = window_spans("x" * length)
        assert spans[0][0] == 0 and spans[-1][1] == length
        assert all(end - start <= EMBED_WINDOW_CHARS for start, end in spans)
        # every character is in a window, consecutive windows share exactly the overlap
        assert all(nxt[0] == prev[1] - WINDOW_OVERLAP_CHARS for prev, nxt in itertools.pairwise(spans))
