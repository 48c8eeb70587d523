"""The JSON every face answers with: datetimes as ISO strings, vectors as lists, models dumped
(HTTP routes, the MCP tools and the CLI serialize the services' models through here)."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

import numpy as np
from pydantic import BaseModel


def _default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def dumps(body: Any) -> str:
    return json.dumps(body, default=_default, ensure_ascii=False, separators=(",", ":"))


def to_jsonable(body: Any) -> Any:
    """Plain JSON types only (datetimes as ISO strings, vectors as lists, models dumped)."""
    return json.loads(dumps(body))
