"""Ingestion rules behind ``/v1/ingestion-rules`` (admin scope to change them, read to list).

Every rule returned here is masked (:meth:`IngestionRule.masked`): converter header values are
write-only. A converter URL is checked by the outbound guard when it is written (HOUSE_STYLE rule
19; refused: 422 naming the reason) and again by the converter adapter when it is called."""

from __future__ import annotations

from memory_engine.domain.ingestion_rules import (
    MASKED_HEADER_VALUE,
    MAX_RULES_PER_PROJECT,
    HttpConverter,
    IngestionRule,
    IngestionRuleFields,
)
from memory_engine.domain.outbound import OutboundRefused
from memory_engine.errors import Conflict, InvalidInput
from memory_engine.ports.ingestion_rules import IngestionRuleRepository
from memory_engine.ports.outbound import OutboundGuard


def _refused(field: str, message: str) -> InvalidInput:
    return InvalidInput(message, details=[{"field": field, "message": message, "type": "value_error"}])


def _checked(guard: OutboundGuard, fields: IngestionRuleFields) -> None:
    """Raises InvalidInput when the converter URL points where the engine must not connect."""
    if isinstance(fields.converter, HttpConverter):
        try:
            guard.check_url(fields.converter.url)
        except OutboundRefused as exc:
            raise _refused("converter.http.url", f"the converter URL is refused: {exc.reason}; converters must be public "
                           "addresses unless the operator allows the host in CONVERTER_ALLOWED_HOSTS") from exc


def create_rule(rules: IngestionRuleRepository, guard: OutboundGuard, project_id: str,
                fields: IngestionRuleFields) -> IngestionRule:
    """Raises InvalidInput (a refused converter URL, a masked header value), Conflict (same glob
    already has a rule, or the project has too many)."""
    _checked(guard, fields)
    if isinstance(fields.converter, HttpConverter):
        masked = [name for name, value in fields.converter.headers.items() if value == MASKED_HEADER_VALUE]
        if masked:
            raise _refused("converter.http.headers", f"header {masked[0]}: {MASKED_HEADER_VALUE!r} stands for a stored "
                           "value (GET masks header values); send the value itself")
    if rules.count(project_id) >= MAX_RULES_PER_PROJECT:
        raise Conflict(f"a project has at most {MAX_RULES_PER_PROJECT} ingestion rules; delete one first")
    return rules.create(project_id, fields).masked()


def list_rules(rules: IngestionRuleRepository, project_id: str) -> list[IngestionRule]:
    return [rule.masked() for rule in rules.list(project_id)]


def get_rule(rules: IngestionRuleRepository, project_id: str, rule_id: str) -> IngestionRule:
    """Raises NotFound."""
    return rules.get(project_id, rule_id).masked()


def replace_rule(rules: IngestionRuleRepository, guard: OutboundGuard, project_id: str, rule_id: str,
                 fields: IngestionRuleFields) -> IngestionRule:
    """Raises NotFound, Conflict, InvalidInput (a refused converter URL; a header value sent back
    masked that cannot be kept). A header value sent back as ``"***"`` keeps the stored value while
    the converter URL keeps its origin. Documents ingested before keep their settings; the new rule
    applies from their next ingestion."""
    _checked(guard, fields)
    if isinstance(fields.converter, HttpConverter) and MASKED_HEADER_VALUE in fields.converter.headers.values():
        stored = rules.get(project_id, rule_id).converter
        try:
            converter = fields.converter.with_stored_values(stored if isinstance(stored, HttpConverter) else None)
        except ValueError as exc:
            raise _refused("converter.http.headers", str(exc)) from exc
        fields = fields.model_copy(update={"converter": converter})
    return rules.replace(project_id, rule_id, fields).masked()


def delete_rule(rules: IngestionRuleRepository, project_id: str, rule_id: str) -> None:
    """Raises NotFound."""
    rules.delete(project_id, rule_id)
