"""The rules every value must pass before it may reach storage: one module, used by every model.

PostgreSQL cannot hold some values Python and JSON can: a NUL character (``\\u0000``) in ``text``
or ``jsonb``, an unpaired UTF-16 surrogate (``\\ud800``; not valid UTF-8), a non-finite number in
``jsonb``, a ``timestamptz`` whose UTC form falls outside the years 1..9999 (Python cannot read it
back). And a JSON value nested hundreds of levels deep is stored fine but breaks serialization on
every later read. These rules reject all of them at the edge (422 naming the field), before any
SQL runs, as pydantic annotated types:

- :data:`Text` — a string that can be stored (no NUL, no lone surrogate);
- :data:`JsonObject` — a ``metadata`` object: at most :data:`MAX_JSON_DEPTH` levels, storable keys
  and strings, finite numbers;
- :data:`Timestamp` — an aware datetime (naive means UTC) whose UTC form is within years 1..9999;
- :func:`document_path` — the one rule for a document path, wherever a path enters;
- :func:`project_name` — project names are slugs (they name a folder under ``drop/``).

:func:`readable_json` is the read-side counterpart: a value stored before these rules (a legacy
row) is clipped so a read can never fail on it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, Strict, model_validator

#: The deepest a ``metadata`` object may nest (the object itself is level 1); deeper is 422.
MAX_JSON_DEPTH = 32
#: The deepest a whole request body may nest (envelope + metadata); deeper is 422 before parsing.
MAX_BODY_DEPTH = 64
#: Longest path segment in UTF-8 bytes (file systems' NAME_MAX, and S3 keys stay portable).
MAX_PATH_SEGMENT_BYTES = 255
MAX_PATH_CHARS = 1024
#: Project names: lowercase slugs, 1..64 characters, starting with a letter or digit.
PROJECT_NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
#: What a clipped value reads as (see :func:`readable_json`).
CLIPPED = f"[nested deeper than {MAX_JSON_DEPTH} levels: not shown]"

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_JSON_SPECIAL = re.compile(r'[\[\]{},"\\]')


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as PostgreSQL text, or None when it can."""
    if "\x00" in value:
        return "must not contain NUL (\\u0000) characters"
    if _SURROGATE.search(value):
        return "must not contain unpaired surrogates (\\ud800-\\udfff)"
    return None


def scrub_text(value: str) -> str:
    """Text read from a file, made storable: NUL removed, unpaired surrogates replaced by U+FFFD.
    (Callers' own fields are rejected instead, see :func:`storable_text`; a file's text is kept.)"""
    if "\x00" in value:
        value = value.replace("\x00", "")
    return _SURROGATE.sub("\ufffd", value)


def storable_text(value: str) -> str:
    """``value`` unchanged; raises ValueError when PostgreSQL cannot store it."""
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _where(path: list[str]) -> str:
    return "".join(path) or "the value"


def json_problem(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``value`` (parsed JSON) cannot be stored as ``jsonb`` metadata, or None when it can.

    Walks the value without recursion, so any depth is checked safely.
    """
    stack: list[tuple[Any, int, list[str]]] = [(value, 1 if isinstance(value, (dict, list)) else 0, [])]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, (dict, list)) and depth > max_depth:
            return f"is nested deeper than {max_depth} levels (at {_where(path)})"
        if isinstance(item, dict):
            for key, child in item.items():
                key_text = str(key)
                problem = text_problem(key_text)
                if problem:
                    return f"key {_where(path)}.{key_text!r} {problem}"
                stack.append((child, depth + 1, [*path, f".{key_text}"]))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, [*path, f"[{i}]"]) for i, child in enumerate(item))
        elif isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return f"value at {_where(path)} {problem}"
        elif isinstance(item, float) and not math.isfinite(item):
            return f"value at {_where(path)} must be a finite number"
    return None


def storable_json_object(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` unchanged; raises ValueError naming the first part that cannot be stored."""
    problem = json_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def readable_json(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A stored JSON value with everything deeper than ``max_depth`` replaced by :data:`CLIPPED`.

    New writes can never be that deep; rows stored before the limit existed stay readable
    (their serialization would fail past ~255 levels) instead of failing every read.
    """
    if not _deeper_than(value, max_depth):
        return value

    def clip(item: Any, depth: int) -> Any:
        if isinstance(item, (dict, list)) and depth > max_depth:
            return CLIPPED
        if isinstance(item, dict):
            return {k: clip(v, depth + 1) for k, v in item.items()}
        if isinstance(item, list):
            return [clip(v, depth + 1) for v in item]
        return item

    return clip(value, 1)


def _deeper_than(value: Any, max_depth: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def json_text_too_deep(text: str, limit: int = MAX_BODY_DEPTH) -> bool:
    """Whether the JSON document ``text`` nests deeper than ``limit``, found without parsing it
    (parsing a document a thousand levels deep is what fails). Linear in the text: only brackets,
    quotes and backslashes are visited, and only when there are more brackets than ``limit``."""
    if text.count("{") + text.count("[") <= limit:
        return False
    depth = 0
    for _, ch in json_structure(text):
        if ch in "{[":
            depth += 1
            if depth > limit:
                return True
        elif ch in "}]":
            depth -= 1
    return False


class JsonTooDeep(ValueError):
    """A JSON document nesting deeper than :func:`loads_json` allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nests deeper than {limit} levels")
        self.limit = limit


def loads_json(data: str | bytes, *, limit: int = MAX_BODY_DEPTH) -> Any:
    """``json.loads`` under the one depth rule for every JSON the engine parses: request bodies
    (base64-encoded and token routes too), import lines, converter answers and callback bodies,
    events. Raises :class:`JsonTooDeep` (a ValueError) before parsing a document nested deeper than
    ``limit`` (parsing one is what fails: ``RecursionError`` at ~1,000 levels), ``json.JSONDecodeError``
    for text that is not JSON and ``UnicodeDecodeError`` for bytes that are not UTF-8 (both
    ValueErrors too)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if json_text_too_deep(text, limit):
        raise JsonTooDeep(limit)
    return json.loads(text)


def json_structure(text: str) -> Iterator[tuple[int, str]]:
    """``(position, character)`` of each bracket and comma of ``text`` outside its JSON strings
    (quotes and backslash escapes honoured), in order; linear, only those characters are visited."""
    in_string = False
    escaped_at = -1
    for match in _JSON_SPECIAL.finditer(text):
        ch, at = match.group(), match.start()
        if in_string:
            if at == escaped_at:
                continue
            if ch == "\\":
                escaped_at = at + 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch != "\\":
            yield at, ch


def storable_datetime(value: datetime) -> datetime:
    """An aware datetime (naive is read as UTC); raises ValueError when its UTC form is outside
    the years 1..9999 (PostgreSQL stores it, but no Python client could read the row back)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ValueError("must be between 0001-01-01 and 9999-12-31 in UTC") from None
    return value


def validity_window_problem(valid_from: datetime | None, valid_to: datetime | None) -> str | None:
    """The one rule for a fact's validity window (POST and PUT of an entry)."""
    if valid_from is not None and valid_to is not None and valid_to < valid_from:
        return "valid_to must not be before valid_from"
    return None


def document_path(path: str) -> str:
    """The canonical document path (``"a/b.md"`` -> ``"/a/b.md"``); raises ValueError saying why not.

    One rule for every entry point (``POST /v1/documents``, upload URLs, the drop folder, S3 keys):
    non-empty segments, none ``.``/``..`` or hidden (leading ``.``), no control characters, NUL or
    unpaired surrogates, each segment at most :data:`MAX_PATH_SEGMENT_BYTES` UTF-8 bytes, the whole
    path at most :data:`MAX_PATH_CHARS` characters.
    """
    problem = text_problem(path)
    if problem:
        raise ValueError(f"path {problem}")
    clean = "/" + path.strip().lstrip("/")
    if _CONTROL.search(clean):
        raise ValueError("path must not contain control characters")
    parts = clean.split("/")[1:]
    if not clean.strip("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError("path must be like /folder/name.ext (no empty, '.' or '..' segments)")
    if any(p.startswith(".") for p in parts):
        raise ValueError("path segments must not start with '.' (hidden files are not ingested)")
    for part in parts:
        if len(part.encode("utf-8")) > MAX_PATH_SEGMENT_BYTES:
            raise ValueError(f"each path segment must be at most {MAX_PATH_SEGMENT_BYTES} bytes (UTF-8)")
    if len(clean) > MAX_PATH_CHARS:
        raise ValueError(f"path is longer than {MAX_PATH_CHARS} characters")
    return clean


def project_name(name: str) -> str:
    """``name`` when it is a valid project name (a lowercase slug); raises ValueError otherwise."""
    if not PROJECT_NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"invalid project name {name[:80]!r}: use 1..64 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return name


def non_blank(what: str) -> AfterValidator:
    """A field's validator refusing a value of white space only (``"<what> must not be blank"``)."""

    def check(value: str) -> str:
        if not value.strip():
            raise ValueError(f"{what} must not be blank")
        return value

    return AfterValidator(check)


#: An integer of a request body: a JSON ``true`` is not ``1`` (lax validation would read it so,
#: and the schema says ``integer``), nor is ``2.0``.
Int = Annotated[int, Strict()]
#: A number of a request body: an integer or a float, never a boolean.
Float = Annotated[float, Strict()]
#: A string PostgreSQL can store.
Text = Annotated[str, AfterValidator(storable_text)]
#: A ``metadata`` object PostgreSQL can store and every later read can serialize.
JsonObject = Annotated[dict[str, Any], AfterValidator(storable_json_object)]
#: A timestamp PostgreSQL can store and Python can read back (naive means UTC).
Timestamp = Annotated[datetime, AfterValidator(storable_datetime)]
#: Stored metadata as the API returns it: never fails to serialize (see :func:`readable_json`).
StoredJson = Annotated[dict[str, Any], BeforeValidator(readable_json)]


class ValidityWindow(BaseModel):
    """A body carrying a fact's validity window (``NewEntry`` for POST, ``EntryReplacement`` for PUT):
    ``valid_to`` before ``valid_from`` is rejected by the one rule above."""

    valid_from: Timestamp | None = None
    valid_to: Timestamp | None = None

    @model_validator(mode="after")
    def _validity_window(self) -> Self:
        problem = validity_window_problem(self.valid_from, self.valid_to)
        if problem:
            raise ValueError(problem)
        return self

