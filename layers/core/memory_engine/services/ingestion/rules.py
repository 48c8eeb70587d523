"""Ingestion rules behind ``/v1/ingestion-rules`` (admin scope to change them, read to list)."""

from __future__ import annotations

from memory_engine.domain.ingestion_rules import MAX_RULES_PER_PROJECT, IngestionRule, IngestionRuleFields
from memory_engine.errors import Conflict
from memory_engine.ports.ingestion_rules import IngestionRuleRepository


def create_rule(rules: IngestionRuleRepository, project_id: str, fields: IngestionRuleFields) -> IngestionRule:
    """Raises Conflict (same glob already has a rule, or the project has too many)."""
    if rules.count(project_id) >= MAX_RULES_PER_PROJECT:
        raise Conflict(f"a project has at most {MAX_RULES_PER_PROJECT} ingestion rules; delete one first")
    return rules.create(project_id, fields)


def list_rules(rules: IngestionRuleRepository, project_id: str) -> list[IngestionRule]:
    return rules.list(project_id)


def get_rule(rules: IngestionRuleRepository, project_id: str, rule_id: str) -> IngestionRule:
    """Raises NotFound."""
    return rules.get(project_id, rule_id)


def replace_rule(rules: IngestionRuleRepository, project_id: str, rule_id: str,
                 fields: IngestionRuleFields) -> IngestionRule:
    """Raises NotFound, Conflict. Documents ingested before keep their settings; the new rule
    applies from their next ingestion."""
    return rules.replace(project_id, rule_id, fields)


def delete_rule(rules: IngestionRuleRepository, project_id: str, rule_id: str) -> None:
    """Raises NotFound."""
    rules.delete(project_id, rule_id)
