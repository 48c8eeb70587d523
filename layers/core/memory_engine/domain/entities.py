"""Entity names and anchor-enriched embedding text (pure)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from memory_engine.domain.entries import EntityRef, EntityRole

_WS = re.compile(r"\s+")


def normalize_entity_name(name: str) -> str:
    """The matching key of an entity: NFKC, lower case, whitespace collapsed, stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", name)).strip().lower()


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


def anchor_name(links: Sequence[NewEntityLink]) -> str | None:
    """The anchor of a fact: its subject entity, else its first entity, else none."""
    for link in links:
        if link.role == "subject":
            return link.display_name
    return links[0].display_name if links else None


def embedding_text(content: str, anchor: str | None, *, context: str | None = None) -> str:
    """What gets embedded for a fact: ``"<fact>. About: <anchor>."`` when it has an anchor
    (the Memory Soda design: the anchor becomes prominent in vector space), else the bare fact;
    after its ``context`` line when it has one (the turn before it: "Yes, last Tuesday!" alone
    means nothing)."""
    text = content.strip()
    if anchor:
        text = f"{text} About: {anchor}." if text.endswith((".", "!", "?")) else f"{text}. About: {anchor}."
    return f"{context.strip()}\n{text}" if context and context.strip() else text
