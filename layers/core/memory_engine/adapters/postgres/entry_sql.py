"""The SQL pieces of a memory entry shared by the entry repository, search and lifecycle: the
columns as the API reads them (expiry applied at read time), the entity listing, the insert's
columns and values, and the entities upserted and linked in the same statement as a write."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.domain.entities import ROLE_ORDER, NewEntityLink
from memory_engine.domain.entries import EXPIRED_REASON, MemoryEntry
from memory_engine.ports.embedder import Vector
from memory_engine.ports.entries import EntityVectors

ENTRY_COLUMNS = (
    "id, project_id, memory_id, content, source_type, tags, metadata, subject, predicate, object, confidence,"
    " source_quote, context, valid_from, valid_to, source_conversation_id, source_generation_id, source_event_id,"
    " invalidated_at, superseded_by_entry_id, invalidation_reason, expires_at, created_at, updated_at"
)


def not_expired(alias: str = "e") -> str:
    """The read-time expiry filter: an entry past its ``expires_at`` is out of every read and of
    the funnel's dedup at once, before the sweep invalidates it."""
    return f"({alias}.expires_at IS NULL OR {alias}.expires_at > now())"


def _read_column(column: str) -> str:
    # An entry past its expiry reads as invalidated (reason 'expired', at its expiry) even before
    # the sweep has written that, so a read never contradicts the filter above.
    if column == "invalidated_at":
        return "CASE WHEN e.invalidated_at IS NULL AND e.expires_at <= now() THEN e.expires_at" \
               " ELSE e.invalidated_at END AS invalidated_at"
    if column == "invalidation_reason":
        return f"CASE WHEN e.invalidated_at IS NULL AND e.expires_at <= now() THEN '{EXPIRED_REASON}'" \
               " ELSE e.invalidation_reason END AS invalidation_reason"
    return f"e.{column}"




def role_rank(column: str) -> str:
    """The place of the role in ``column`` in :data:`ROLE_ORDER` (subject, object, mention)."""
    return "array_position(ARRAY[" + ",".join(f"'{role}'" for role in ROLE_ORDER) + f"], {column})"


#: An entry's entities as the API lists them everywhere (the entry, lists, search results):
#: subject, object, mention, then by name. Format with the entry table's ``alias``.
ENTITIES_OF = (
    "(SELECT coalesce(json_agg(json_build_object('name', n.display_name, 'type', n.type, 'role', l.role)"  # noqa: S608 - the role order is a domain constant; no value is interpolated
    f" ORDER BY {role_rank('l.role')}, n.name), '[]'::json)"
    " FROM entry_entities l JOIN entities n ON n.id = l.entity_id WHERE l.entry_id = {alias}.id)"
)
#: The entry's columns as the API reads them (expiry applied), from table alias ``e``: also what a
#: write returns (``INSERT INTO memory_entries AS e ... RETURNING``), so a write with a past
#: ``expires_at`` answers what a GET shows.
ENTRY_RETURNING = ", ".join(_read_column(c.strip()) for c in ENTRY_COLUMNS.split(","))
#: The entry as the API returns it, from table alias ``e``.
ENTRY_SELECT = (
    ", ".join(_read_column(c.strip()) for c in ENTRY_COLUMNS.split(",")) + ", " + ENTITIES_OF.format(alias="e") + " AS entities"
)

INSERT_COLUMNS = (
    "id, project_id, memory_id, content, source_type, tags, metadata, embedding, own_embedding, subject, predicate, object,"
    " confidence, source_quote, context, valid_from, valid_to, source_conversation_id, source_generation_id, source_event_id,"
    " expires_at"
)
#: An entry without its own expiry takes the memory's ``default_ttl`` (seconds) from now.
_EXPIRES_AT = (
    "coalesce(%(expires_at)s::timestamptz,"
    " now() + (SELECT make_interval(secs => dm.default_ttl) FROM memories dm WHERE dm.id = %(m)s))"
)
INSERT_VALUES = ", ".join(
    _EXPIRES_AT if c.strip() == "expires_at" else "%(" + {"project_id": "p", "memory_id": "m"}.get(c.strip(), c.strip()) + ")s"
    for c in INSERT_COLUMNS.split(",")
)

#: Entities upserted and linked in the same statement as the entry write (``{target}`` gives the
#: entry id, ``{memory}`` its memory's: each link records its fact's memory, migration 0015). An
#: existing entity keeps its display name; a missing type or vector is filled in.
ENTITY_CTES = """
ent AS (
    INSERT INTO entities AS x (id, project_id, name, display_name, type, embedding)
    SELECT u.id, %(p)s, u.key, u.display, u.type, u.vec::vector
    FROM unnest(%(ent_ids)s::text[], %(ent_keys)s::text[], %(ent_displays)s::text[], %(ent_types)s::text[],
                %(ent_vecs)s::text[]) AS u(id, key, display, type, vec)
    ON CONFLICT (project_id, name) DO UPDATE
        SET type = coalesce(x.type, EXCLUDED.type), embedding = coalesce(x.embedding, EXCLUDED.embedding)
    RETURNING x.id, x.name, x.display_name, x.type
),
lnk AS (
    INSERT INTO entry_entities (entry_id, entity_id, role, memory_id)
    SELECT {target}, ent.id, r.role, {memory}
    FROM ent JOIN unnest(%(ent_keys)s::text[], %(ent_roles)s::text[]) AS r(key, role) ON r.key = ent.name
    ON CONFLICT DO NOTHING
)"""

ENTITY_MERGE = (
    "SELECT coalesce(json_agg(json_build_object('name', ent.display_name, 'type', ent.type, 'role', r.role)"  # noqa: S608 - the role order is a domain constant; no value is interpolated
    f" ORDER BY {role_rank('r.role')}, ent.name), '[]'::json)"
    " FROM ent JOIN unnest(%(ent_keys)s::text[], %(ent_roles)s::text[]) AS r(key, role) ON r.key = ent.name"
)


def entry_from_row(row: dict[str, Any]) -> MemoryEntry:
    return MemoryEntry(**{k: v for k, v in row.items() if k != "similarity"})


def vector_text(vector: Sequence[float] | Vector | None) -> str | None:
    """A vector as pgvector's text input (for ``unnest(text[])::vector`` and ``%s::vector``)."""
    if vector is None:
        return None
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


def entity_params(project_id: str, links: Sequence[NewEntityLink], vectors: EntityVectors) -> dict[str, Any]:
    return {
        "p": project_id,
        "ent_ids": [ids.new_id(ids.ENTITY) for _ in links],
        "ent_keys": [link.key for link in links],
        "ent_displays": [link.display_name for link in links],
        "ent_types": [link.type for link in links],
        "ent_vecs": [vector_text(vectors.by_key.get(link.key)) for link in links],
        "ent_roles": [link.role for link in links],
    }


def link_entities(
    conn: psycopg.Connection[dict[str, Any]], project_id: str, memory_id: str, entry_id: str,
    links: Sequence[NewEntityLink], vectors: EntityVectors,
) -> None:
    """Links a stored entry of ``memory_id`` to ``links``' entities."""
    params = {**entity_params(project_id, links, vectors), "eid": entry_id, "m": memory_id}
    conn.execute(f"WITH {ENTITY_CTES.format(target='%(eid)s', memory='%(m)s').strip()} SELECT 1", params)


def jsonb(value: dict[str, Any] | None) -> Jsonb | None:
    return Jsonb(value) if value is not None else None
