"""Compares the client's operation table and pydantic models with an OpenAPI document: which
operations exist, the media type of a body that is not JSON (the JSONL of export and import), and
for each model its field names, which fields are required, and the allowed values of its
enumerations, recursively through nested models."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from pydantic import BaseModel

from memory_engine_client._core import OPERATIONS

#: Operations the client leaves out on purpose, and why.
EXCLUDED = {
    ("POST", "/v1/events"): "local-only EventBridge stand-in",
    ("PUT", "/v1/local-uploads/{token}"): "local-only S3 stand-in; reached through upload_document's URL",
    ("GET", "/v1/local-downloads/{token}"): "local-only S3 stand-in; converters GET the download_url the engine sends",
    ("POST", "/v1/converter-callbacks/{token}"): "converters POST to the callback_url the engine sends (docs/ingestion.md)",
    ("POST", "/v1/mcp"): "MCP clients speak it (the mcp SDK), see docs/mcp.md",
    ("GET", "/v1/openapi.json"): "the document itself",
}


def _component(document: dict[str, Any], ref: str) -> tuple[str, dict[str, Any]]:
    name = ref.rsplit("/", 1)[-1]
    return name, document["components"]["schemas"][name]


def _schema_shape(document: dict[str, Any], schema: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(component names of objects, enum values) that a property schema may hold."""
    refs: set[str] = set()
    enums: set[str] = set()
    stack = [schema]
    while stack:
        item = stack.pop()
        if "$ref" in item:
            name, target = _component(document, item["$ref"])
            if "enum" in target:
                enums.update(map(str, target["enum"]))
            else:
                refs.add(name)
        enums.update(map(str, item.get("enum", [])))
        if "const" in item:
            enums.add(str(item["const"]))
        for key in ("anyOf", "oneOf", "allOf"):
            stack.extend(item.get(key, []))
        if isinstance(item.get("items"), dict):
            stack.append(item["items"])
    return refs, enums


def _annotation_shape(annotation: Any) -> tuple[set[type[BaseModel]], set[str]]:
    models: set[type[BaseModel]] = set()
    literals: set[str] = set()
    stack = [annotation]
    while stack:
        item = stack.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            models.add(item)
            continue
        origin = typing.get_origin(item)
        if origin is Literal:
            literals.update(map(str, typing.get_args(item)))
        elif origin is not None or isinstance(item, types.UnionType):
            stack.extend(typing.get_args(item))
    return models, literals


def compare_model(document: dict[str, Any], model: type[BaseModel], schema_name: str, *, request: bool,
                  seen: set[tuple[str, str]] | None = None) -> list[str]:
    """Every difference between ``model`` and component ``schema_name``, as readable lines."""
    seen = set() if seen is None else seen
    if (model.__name__, schema_name) in seen:
        return []
    seen.add((model.__name__, schema_name))
    schema = document["components"]["schemas"][schema_name]
    where = f"{model.__name__} vs {schema_name}"
    problems: list[str] = []
    properties: dict[str, Any] = schema.get("properties", {})
    fields = model.model_fields
    if set(fields) != set(properties):
        problems.append(f"{where}: fields only in the client {sorted(set(fields) - set(properties))}, "
                        f"only in the API {sorted(set(properties) - set(fields))}")
    required = set(schema.get("required", []))
    client_required = {name for name, field in fields.items() if field.is_required()}
    if request and client_required != required:
        problems.append(f"{where}: required in the client {sorted(client_required)}, in the API {sorted(required)}")
    if not request and not client_required <= required:
        problems.append(f"{where}: the client requires {sorted(client_required - required)}, which the API may omit")
    for name in set(fields) & set(properties):
        refs, enums = _schema_shape(document, properties[name])
        models, literals = _annotation_shape(fields[name].annotation)
        if enums and literals and enums != literals:
            problems.append(f"{where}.{name}: values {sorted(literals)} in the client, {sorted(enums)} in the API")
        if bool(refs) != bool(models):
            problems.append(f"{where}.{name}: nested models {sorted(m.__name__ for m in models)} vs {sorted(refs)}")
        for nested in models:
            match = nested.__name__ if nested.__name__ in refs else (next(iter(refs)) if len(refs) == 1 else None)
            if match is None:
                problems.append(f"{where}.{name}: no API schema for {nested.__name__} among {sorted(refs)}")
                continue
            problems += compare_model(document, nested, match, request=request, seen=seen)
    return problems


def compare_operations(document: dict[str, Any]) -> list[str]:
    """Every difference between the client's operation table and the document's operations."""
    problems: list[str] = []
    documented = {(method.upper(), path): op for path, ops in document["paths"].items() for method, op in ops.items()}
    client = {(o.method, o.path): name for name, o in OPERATIONS.items()}
    missing = set(documented) - set(client) - set(EXCLUDED)
    extra = set(client) - set(documented)
    if missing:
        problems.append(f"operations the client lacks: {sorted(missing)}")
    if extra:
        problems.append(f"client operations the API does not have: {sorted(extra)}")
    for key, name in client.items():
        if key not in documented:
            continue
        spec, operation = documented[key], OPERATIONS[name]
        request_media = set(spec.get("requestBody", {}).get("content", {})) - {"application/json"}
        if request_media != ({operation.request_media} if operation.request_media else set()):
            problems.append(f"{name}: request media {operation.request_media} vs {sorted(request_media)}")
        body = spec.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        body_refs = _schema_shape(document, body)[0] if body else set()
        if (operation.request is None) != (not body_refs):
            problems.append(f"{name}: request body {operation.request} vs {sorted(body_refs)}")
        elif operation.request is not None:
            problems += compare_model(document, operation.request, body_refs.pop(), request=True)
        success = {status: r for status, r in spec["responses"].items() if status.startswith("2")}
        response_media = {media for r in success.values() for media in r.get("content", {})} - {"application/json"}
        if response_media != ({operation.response_media} if operation.response_media else set()):
            problems.append(f"{name}: response media {operation.response_media} vs {sorted(response_media)}")
        response_refs = set()
        for response in success.values():
            schema = response.get("content", {}).get("application/json", {}).get("schema")
            if schema:
                response_refs |= _schema_shape(document, schema)[0]
        if (operation.response is None) != (not response_refs):
            problems.append(f"{name}: response {operation.response} vs {sorted(response_refs)}")
        elif operation.response is not None:
            if len(response_refs) != 1:
                problems.append(f"{name}: several response schemas {sorted(response_refs)}")
            else:
                problems += compare_model(document, operation.response, response_refs.pop(), request=False)
    return problems
