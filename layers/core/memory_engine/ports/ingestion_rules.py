"""The ingestion rule repository port (``/v1/ingestion-rules``)."""

from __future__ import annotations

from typing import Protocol

from memory_engine.domain.ingestion_rules import IngestionRule, IngestionRuleFields


class IngestionRuleRepository(Protocol):
    """Every method is scoped by ``project_id``; another project's rule is NotFound. Raises
    :class:`memory_engine.errors.DatabaseError` when the database fails."""

    def create(self, project_id: str, fields: IngestionRuleFields) -> IngestionRule:
        """Raises Conflict when the project has a rule with the same glob."""
        ...

    def get(self, project_id: str, rule_id: str) -> IngestionRule:
        """Raises NotFound."""
        ...

    def list(self, project_id: str) -> list[IngestionRule]:
        """Oldest first."""
        ...

    def count(self, project_id: str) -> int: ...

    def replace(self, project_id: str, rule_id: str, fields: IngestionRuleFields) -> IngestionRule:
        """Raises NotFound, Conflict (another rule has the glob)."""
        ...

    def delete(self, project_id: str, rule_id: str) -> None:
        """Raises NotFound."""
        ...
