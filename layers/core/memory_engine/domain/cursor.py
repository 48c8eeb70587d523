"""Opaque keyset cursors for list endpoints ordered ``created_at DESC, id DESC``.

A cursor encodes the last row's ``(created_at, id)``; the next page is the rows strictly
before it: ``WHERE (created_at, id) < (%s, %s)``. The encoding is URL-safe base64 of JSON
so clients treat it as opaque and it survives query strings.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory_engine.domain.validation import loads_json, storable_datetime, storable_text
from memory_engine.errors import InvalidInput

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def check_limit(limit: int) -> int:
    """A list's page size, ``limit`` itself; raises InvalidInput (422) outside 1..``MAX_LIMIT``."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}", details=[{"field": "limit"}])
    return limit


@dataclass(frozen=True)
class Cursor:
    created_at: datetime
    id: str


def encode_cursor(created_at: datetime, id: str) -> str:
    raw = json.dumps([created_at.isoformat(), id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(value: str | None) -> Cursor | None:
    """``None`` for no cursor; raises InvalidInput (422) for one this API did not issue: it is input
    like any other (a forged one must not reach SQL with a value PostgreSQL cannot hold)."""
    if value is None or value == "":
        return None
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        created, row_id = loads_json(raw)
        if not isinstance(created, str) or not isinstance(row_id, str):
            raise ValueError("bad cursor shape")
        stamp = datetime.fromisoformat(storable_text(created))
        if stamp.tzinfo is None:
            raise ValueError("cursor timestamp has no zone")
        return Cursor(storable_datetime(stamp), storable_text(row_id))
    except (ValueError, TypeError, binascii.Error) as exc:
        raise InvalidInput("invalid cursor; pass back the next_cursor of a previous page", details=[{"field": "cursor"}]) from exc


def next_cursor(rows_created_ids: list[tuple[datetime, str]], limit: int) -> str | None:
    """The cursor after a page fetched with ``LIMIT limit + 1``: ``None`` when no row is left."""
    if len(rows_created_ids) <= limit:
        return None
    created_at, row_id = rows_created_ids[limit - 1]
    return encode_cursor(created_at, row_id)


def page(data: list[Any], next_cursor: str | None) -> dict[str, Any]:
    """The SPEC's list shape."""
    return {"data": data, "next_cursor": next_cursor}
