"""Ingestion rules in PostgreSQL (``ingestion_rules``; the converter is a ``jsonb`` object)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memory_engine import ids
from memory_engine.adapters.postgres.database import Database
from memory_engine.domain.ingestion_rules import IngestionRule, IngestionRuleFields
from memory_engine.errors import Conflict, NotFound

_COLUMNS = ("id, project_id, content_type_glob, converter, native_extraction, file_delivery, chunk_strategy,"
            " chunk_size, chunk_overlap, created_at, updated_at")


def rule_from_row(row: dict[str, Any]) -> IngestionRule:
    return IngestionRule.model_validate(row)


def list_rules(conn: psycopg.Connection[dict[str, Any]], project_id: str) -> list[IngestionRule]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM ingestion_rules WHERE project_id = %s ORDER BY created_at, id",  # noqa: S608 - fixed column list
        (project_id,),
    ).fetchall()
    return [rule_from_row(r) for r in rows]


def _values(fields: IngestionRuleFields) -> dict[str, Any]:
    converter = fields.converter.model_dump(mode="json")
    return {
        "glob": fields.content_type_glob, "converter": Jsonb(converter), "url": converter.get("url"),
        "native": fields.native_extraction.value, "delivery": fields.file_delivery.value,
        "strategy": fields.chunk_strategy.value if fields.chunk_strategy else None,
        "size": fields.chunk_size, "overlap": fields.chunk_overlap,
    }


class PostgresIngestionRuleRepository:
    """Implements :class:`memory_engine.ports.ingestion_rules.IngestionRuleRepository`."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def create(self, project_id: str, fields: IngestionRuleFields) -> IngestionRule:
        with self._db.connection() as conn:
            try:
                row = conn.execute(
                    f"""INSERT INTO ingestion_rules (id, project_id, content_type_glob, converter, converter_url,
                            native_extraction, file_delivery, chunk_strategy, chunk_size, chunk_overlap)
                        VALUES (%(id)s, %(p)s, %(glob)s, %(converter)s, %(url)s, %(native)s, %(delivery)s,
                                %(strategy)s, %(size)s, %(overlap)s)
                        RETURNING {_COLUMNS}""",  # noqa: S608 - fixed column list
                    {"id": ids.new_id(ids.RULE), "p": project_id, **_values(fields)},
                ).fetchone()
            except psycopg.errors.UniqueViolation:
                conn.rollback()
                row = None
        if row is None:
            raise self._duplicate(fields)
        return rule_from_row(row)

    def get(self, project_id: str, rule_id: str) -> IngestionRule:
        row = self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM ingestion_rules WHERE project_id = %s AND id = %s",  # noqa: S608 - fixed column list
            (project_id, rule_id),
        )
        if row is None:
            raise NotFound(f"ingestion rule {rule_id} not found")
        return rule_from_row(row)

    def list(self, project_id: str) -> list[IngestionRule]:
        with self._db.connection() as conn:
            return list_rules(conn, project_id)

    def count(self, project_id: str) -> int:
        row = self._db.fetch_one("SELECT count(*) AS n FROM ingestion_rules WHERE project_id = %s", (project_id,))
        return int(row["n"]) if row else 0

    def replace(self, project_id: str, rule_id: str, fields: IngestionRuleFields) -> IngestionRule:
        with self._db.connection() as conn:
            try:
                row = conn.execute(
                    f"""UPDATE ingestion_rules SET content_type_glob = %(glob)s, converter = %(converter)s,
                            converter_url = %(url)s, native_extraction = %(native)s, file_delivery = %(delivery)s,
                            chunk_strategy = %(strategy)s, chunk_size = %(size)s, chunk_overlap = %(overlap)s,
                            updated_at = now()
                        WHERE project_id = %(p)s AND id = %(id)s RETURNING {_COLUMNS}""",  # noqa: S608 - fixed column list
                    {"id": rule_id, "p": project_id, **_values(fields)},
                ).fetchone()
            except psycopg.errors.UniqueViolation:
                conn.rollback()
                raise self._duplicate(fields) from None
        if row is None:
            raise NotFound(f"ingestion rule {rule_id} not found")
        return rule_from_row(row)

    def delete(self, project_id: str, rule_id: str) -> None:
        with self._db.connection() as conn:
            cur = conn.execute("DELETE FROM ingestion_rules WHERE project_id = %s AND id = %s", (project_id, rule_id))
        if cur.rowcount == 0:
            raise NotFound(f"ingestion rule {rule_id} not found")

    @staticmethod
    def _duplicate(fields: IngestionRuleFields) -> Conflict:
        return Conflict(f"the project already has an ingestion rule for {fields.content_type_glob}; "
                        "change that rule (PUT /v1/ingestion-rules/{id}) or delete it first",
                        details=[{"field": "content_type_glob"}])
