"""Entity names and anchor-enriched embedding text (pure)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memory_engine.domain.entries import EntityRef, EntityRole, transcript_line
from memory_engine.domain.entries import normalize_entity_name as normalize_entity_name

_WS = re.compile(r"\s+")


def display_entity_name(name: str) -> str:
    """The spelling shown to people: whitespace collapsed, case kept."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", name)).strip()


@dataclass(frozen=True)
class NewEntityLink:
    """One entity to upsert (by ``key``) and link to an entry with ``role``."""

    key: str
    display_name: str
    type: str | None
    role: EntityRole

    @property
    def name(self) -> str:
        """The spelling the entry's entity listing shows."""
        return self.display_name


class LinkedEntity(Protocol):
    """An entity linked to a fact, as any layer holds it (a link to write, a stored entry's
    entity, a search result's)."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...


def entity_links(entities: Sequence[EntityRef], *, subject: str | None, object: str | None) -> list[NewEntityLink]:
    """The links of an entry: each named entity once, role ``subject`` when it names the fact's
    subject, ``object`` when it names its object, ``mention`` otherwise."""
    subject_key = normalize_entity_name(subject) if subject else None
    object_key = normalize_entity_name(object) if object else None
    links: dict[str, NewEntityLink] = {}
    for ref in entities:
        key = normalize_entity_name(ref.name)
        if not key or key in links:
            continue
        role: EntityRole = "subject" if key == subject_key else "object" if key == object_key else "mention"
        links[key] = NewEntityLink(key, display_entity_name(ref.name), ref.type, role)
    return list(links.values())


#: The order of roles in an entry's entity listing and in choosing its anchor.
ROLE_ORDER: tuple[EntityRole, ...] = ("subject", "object", "mention")


def anchor_name(links: Sequence[LinkedEntity]) -> str | None:
    """The anchor of a fact, the entity it is about: its subject entity, else its object, else
    its first mention (the first in ``links`` within a role), else none. A stored entry lists its
    entities in this role order (by name within a role), so its anchor is its first entity, as
    the embedding repair reads it."""
    rank: dict[str, int] = {role: i for i, role in enumerate(ROLE_ORDER)}
    return min(links, key=lambda link: rank.get(link.role, len(rank))).name if links else None


#: About what the embedding model reads of a text: 256 word pieces, some 1,000 characters of English
#: prose (about 4 characters a piece; code and numbers take more pieces a character, so it is an
#: upper bound there). The local model and Titan v2's default input cut the rest.
EMBED_WINDOW_CHARS = 1_000
#: A context shorter than this once cut to the room left is dropped rather than embedded as a stub.
MIN_CONTEXT_CHARS = 80


def embedding_text(content: str, anchor: str | None, *, context: str | None = None, speaker: str | None = None) -> str:
    """What gets embedded for a fact: ``"<fact>. About: <anchor>."`` when it has an anchor
    (the Memory Soda design: the anchor becomes prominent in vector space), else the bare fact;
    after its ``context`` line when it has one (the turn before it: "Yes, last Tuesday!" alone
    means nothing), but only in the room the fact leaves in the model's window
    (:data:`EMBED_WINDOW_CHARS`), the context's end kept (the part next to the fact): placed first
    whole, a long previous turn filled the window and the fact itself was never read (BEAM's long
    technical turns: the vector signal's recall@10 fell from 0.393 to 0.075, issue 35). A turn of a
    conversation is its transcript line, ``"<speaker>: <fact>"`` (``speaker``: who said it,
    :func:`memory_engine.domain.entries.turn_speaker`), as its context's lines are."""
    text, before, _ = _in_window(content, anchor, context, speaker)
    return f"{before}\n{text}" if before else text


def _in_window(content: str, anchor: str | None, context: str | None, speaker: str | None) -> tuple[str, str, bool]:
    """The fact's text (anchored), the part of ``context`` read before it, and whether the context
    was cut to the room the fact leaves (:func:`embedding_text`)."""
    text = transcript_line(speaker, content.strip())
    if anchor:
        text = f"{text} About: {anchor}." if text.endswith((".", "!", "?")) else f"{text}. About: {anchor}."
    room = EMBED_WINDOW_CHARS - len(text) - 1
    before = (context or "").strip()
    if len(before) <= room:
        return text, before, False
    cut = before[len(before) - room:] if room > 0 else ""
    space = cut.find(" ")
    before = cut[space + 1:] if 0 <= space < len(cut) - 1 else cut
    return text, before if len(before) >= MIN_CONTEXT_CHARS else "", True


def fact_texts(content: str, links: Sequence[NewEntityLink], *, context: str | None = None,
               speaker: str | None = None) -> list[str]:
    """What a fact write embeds, in one call: the fact anchor-enriched (:func:`embedding_text`),
    then each linked entity's display name (entities are matched by vector too), then, when the
    first text read a ``context``, the fact's own text alone, without context or anchor
    (:func:`own_text`). The context makes "Yes, last Tuesday!" findable; it also makes a turn after
    a long answer mostly the answer's text, so the write funnel decides on both vectors (a turn is
    not a duplicate of the answer before it) and, where the context was cut to fit the window
    (:func:`keeps_own_vector`), the turn keeps its own as a second vector that search reads too.
    Who the turn is about stays in the first vector: with its anchor, a short turn's own vector is
    mostly the name ("Wow, where did you see that? About: Maria.") and near every question about
    that person (docs/retrieval.md, "A turn's own vector")."""
    anchor = anchor_name(links)
    own = own_text(content, anchor, context=context, speaker=speaker)
    return [embedding_text(content, anchor, context=context, speaker=speaker), *(link.display_name for link in links),
            *([own] if own else [])]


def own_text(content: str, anchor: str | None, *, context: str | None, speaker: str | None = None) -> str | None:
    """The fact's text alone when its embedding text reads a ``context`` (a context too short to
    keep once cut, :data:`MIN_CONTEXT_CHARS`, is not read); else None (its one vector is its own)."""
    _, before, _ = _in_window(content, anchor, context, speaker)
    return content.strip() if before else None


def keeps_own_vector(content: str, anchor: str | None, *, context: str | None, speaker: str | None = None) -> bool:
    """Whether a fact stores the vector of :func:`own_text` beside its first (migration 0011): when
    that first read the end of a ``context`` cut to the room the fact leaves in the window (a long
    turn before it), so the vector is mostly a fragment of that turn. A context that fits whole is
    read whole with the fact (LoCoMo's short turns): a second vector there was measured to cost
    vector-only recall (docs/retrieval.md, "A turn's own vector")."""
    _, before, cut = _in_window(content, anchor, context, speaker)
    return bool(before) and cut
