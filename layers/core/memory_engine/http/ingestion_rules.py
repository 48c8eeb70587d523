"""HTTP routes for ingestion rules: ``POST/GET /v1/ingestion-rules``, ``GET/PUT/DELETE /v1/ingestion-rules/{id}``.

Reading needs the ``read`` scope, changing a rule ``admin`` (a rule sends the project's files to
a service). Another project's rule answers 404.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from memory_engine.bootstrap import get_container
from memory_engine.domain.auth import Scope
from memory_engine.domain.cursor import page
from memory_engine.domain.ingestion_rules import IngestionRule, IngestionRuleFields
from memory_engine.errors import InvalidInput
from memory_engine.http.auth import require
from memory_engine.http.responses import PageCursor, json_response, no_content
from memory_engine.http.schemas import AUTHENTICATED, WITH_BODY, IngestionRulePage, documented
from memory_engine.services.ingestion import rules

router = Router()

_FIELDS = (
    "`content_type_glob` is `type/subtype` with `*`/`?` wildcards (e.g. `application/pdf`, `image/*`); the most "
    "specific matching glob wins (fewest wildcards, then the longest literal). `converter` is "
    "`{type: \"http\", url, headers?, timeout_s? (default 60, at most 240)}` (your service, see docs/ingestion.md "
    "for the protocol) or `{type: \"ocr\"}` (the built-in OCR). `native_extraction`: `first` (default: the native "
    "extractor, the converter when it cannot read the file) or `skip`. `file_delivery`: `base64` (default) or "
    "`download_url` (a signed, expiring GET URL; for large files). `chunk_strategy`/`chunk_size`/`chunk_overlap` "
    "override the entry point's default for files the rule matches (request fields still win). A bad glob, URL, "
    "converter type or size is 422; so is a converter URL on a loopback, private, link-local or metadata address "
    "(unless the operator allows the host in CONVERTER_ALLOWED_HOSTS). Header values are write-only: every answer "
    "shows them as `***`, and a PUT that sends `***` back for a header keeps its stored value (while the URL keeps "
    "its scheme, host and port). A second rule for the same glob is 409."
)


@router.post("/v1/ingestion-rules", summary="Create an ingestion rule", description=f"Admin scope; 201. {_FIELDS}",
             responses=documented({201: (IngestionRule, "the rule")}, *AUTHENTICATED, *WITH_BODY, 409))
def create(body: Annotated[IngestionRuleFields, Body()]) -> Response[Any]:
    principal = require(Scope.ADMIN)
    return json_response(rules.create_rule(get_container().ingestion_rules, get_container().outbound_guard,
                                                principal.project_id, body), 201)


@router.get("/v1/ingestion-rules", summary="List ingestion rules",
            description="The project's rules, oldest first (at most 100 per project, one page: `next_cursor` is "
                        "always null, so any `cursor` is 422).",
            responses=documented({200: (IngestionRulePage, "the rules")}, *AUTHENTICATED, 422))
def list_(cursor: PageCursor = None) -> Response[Any]:
    principal = require(Scope.READ)
    if cursor:
        raise InvalidInput("invalid cursor: this list is one page and issues no cursor", details=[{"field": "cursor"}])
    return json_response(page(rules.list_rules(get_container().ingestion_rules, principal.project_id), None))


@router.get("/v1/ingestion-rules/<rule_id>", summary="Get an ingestion rule",
            description="404 when not in the caller's project.",
            responses=documented({200: (IngestionRule, "the rule")}, *AUTHENTICATED, 404))
def get(rule_id: str) -> Response[Any]:
    principal = require(Scope.READ)
    return json_response(rules.get_rule(get_container().ingestion_rules, principal.project_id, rule_id))


@router.put("/v1/ingestion-rules/<rule_id>", summary="Replace an ingestion rule",
            description=f"Admin scope. The whole rule is replaced; documents ingested before keep their settings "
                        f"until their next ingestion. {_FIELDS}",
            responses=documented({200: (IngestionRule, "the rule")}, *AUTHENTICATED, *WITH_BODY, 404, 409))
def replace(rule_id: str, body: Annotated[IngestionRuleFields, Body()]) -> Response[Any]:
    principal = require(Scope.ADMIN)
    return json_response(rules.replace_rule(get_container().ingestion_rules, get_container().outbound_guard,
                                                 principal.project_id, rule_id, body))


@router.delete("/v1/ingestion-rules/<rule_id>", summary="Delete an ingestion rule", description="Admin scope; 204.",
               responses=documented({204: (None, "deleted")}, *AUTHENTICATED, 404))
def delete(rule_id: str) -> Response[Any]:
    principal = require(Scope.ADMIN)
    rules.delete_rule(get_container().ingestion_rules, principal.project_id, rule_id)
    return no_content()
