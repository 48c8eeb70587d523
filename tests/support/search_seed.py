"""Seeds searchable rows with direct SQL (search tests must not depend on the write funnel)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.bootstrap import Container
from memory_engine.domain.query_text import normalize_name
from memory_engine.services.turns import embed_windows


@dataclass
class Seeder:
    """Writes memories, facts (embedded with their anchor like the write funnel does), entities,
    episodes and ready documents for ONE project."""

    container: Container
    project_name: str
    project_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.project_id = self.container.projects.get_or_create_project(self.project_name).id

    def memory(self, name: str, *, tags: tuple[str, ...] = ()) -> str:
        memory_id = ids.new_id(ids.MEMORY)
        with self.container.database.connection() as conn:
            conn.execute(
                "INSERT INTO memories (id, project_id, name, tags) VALUES (%s, %s, %s, %s)",
                (memory_id, self.project_id, name, list(tags)),
            )
        return memory_id

    def entity(self, display_name: str, type_: str | None = None) -> str:
        name = normalize_name(display_name)
        vector = self.container.embedder.embed_document(display_name)
        with self.container.database.connection() as conn:
            conn.execute(
                "INSERT INTO entities (id, project_id, name, display_name, type, embedding)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (project_id, name) DO NOTHING",
                (ids.new_id(ids.ENTITY), self.project_id, name, display_name, type_, vector),
            )
            row = conn.execute(
                "SELECT id FROM entities WHERE project_id = %s AND name = %s", (self.project_id, name)
            ).fetchone()
        assert row is not None
        return str(row["id"])

    def fact(
        self, memory_id: str, content: str, *, entities: tuple[tuple[str, str], ...] = (),
        tags: tuple[str, ...] = (), confidence: float = 1.0, valid_from: datetime | None = None,
        valid_to: datetime | None = None, invalidated_at: datetime | None = None,
        subject: str | None = None, predicate: str | None = None, object_: str | None = None,
        metadata: dict[str, Any] | None = None, embed: bool = True,
    ) -> str:
        """``entities`` = ((display name, role), ...); the first subject (or first) is the anchor."""
        entry_id = ids.new_id(ids.ENTRY)
        anchor = next((n for n, r in entities if r == "subject"), entities[0][0] if entities else None)
        text = f"{content}. About: {anchor}." if anchor else content
        vector = self.container.embedder.embed_document(text) if embed else None
        entity_ids = [(self.entity(name), role) for name, role in entities]
        with self.container.database.connection() as conn:
            conn.execute(
                "INSERT INTO memory_entries (id, project_id, memory_id, content, tags, metadata, embedding, subject,"
                " predicate, object, confidence, valid_from, valid_to, invalidated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (entry_id, self.project_id, memory_id, content, list(tags), Jsonb(metadata) if metadata else None,
                 vector, subject, predicate, object_, confidence, valid_from, valid_to, invalidated_at),
            )
            for entity_id, role in entity_ids:
                conn.execute(
                    "INSERT INTO entry_entities (entry_id, entity_id, role, memory_id) VALUES (%s, %s, %s, %s)",
                    (entry_id, entity_id, role, memory_id),
                )
        return entry_id

    def document(
        self, path: str, chunks: list[str], *, status: str = "ready", generation: int = 0,
        active_generation: int = 0, ingest_generation: int = 0, pages: bool = False,
    ) -> tuple[str, list[str]]:
        doc_id = ids.new_id(ids.DOCUMENT)
        vectors = self.container.embedder.embed_documents(chunks)
        chunk_ids = []
        with self.container.database.connection() as conn:
            conn.execute(
                "INSERT INTO documents (id, project_id, path, status, active_generation, ingest_generation,"
                " total_chunks, indexed_chunks) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (doc_id, self.project_id, path, status, active_generation, ingest_generation, len(chunks), len(chunks)),
            )
            for index, (text, vector) in enumerate(zip(chunks, vectors, strict=True)):
                chunk_id = ids.new_id(ids.CHUNK)
                chunk_ids.append(chunk_id)
                conn.execute(
                    "INSERT INTO document_chunks (id, project_id, document_id, generation, chunk_index, page, content,"
                    " embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    (chunk_id, self.project_id, doc_id, generation, index, index + 1 if pages else None, text, vector),
                )
        return doc_id, chunk_ids

    def episode(self, memory_id: str, transcript: str, *, occurred_at: datetime | None = None) -> str:
        episode_id = ids.new_id(ids.EPISODE)
        with self.container.database.connection() as conn:
            conn.execute(
                "INSERT INTO episodes (id, project_id, memory_id, occurred_at, transcript)"
                " VALUES (%s, %s, %s, %s, %s)",
                (episode_id, self.project_id, memory_id, occurred_at, transcript),
            )
        # its vectors as a stored turn's: windows covering the whole transcript (the first is its own)
        self.container.episodes.set_windows(self.project_id, episode_id,
                                            embed_windows(self.container.embedder, [transcript])[0])
        return episode_id
