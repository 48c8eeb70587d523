"""Prefixed, time-sortable identifiers (``mem_01J...``): a ULID body after a type prefix."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32

PROJECT = "proj"
API_KEY = "key"
MEMORY = "mem"
ENTRY = "ment"
ENTITY = "ent"
EPISODE = "epi"
DOCUMENT = "doc"
CHUNK = "chunk"
RUN = "run"
RULE = "rule"


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, rem = divmod(value, 32)
        chars.append(_ALPHABET[rem])
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """``<prefix>_<26 chars>``; ids made later sort after ids made earlier (ms resolution)."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    return f"{prefix}_{_encode(millis, 10)}{_encode(rand, 16)}"


def has_prefix(value: str, prefix: str) -> bool:
    return value.startswith(prefix + "_") and len(value) == len(prefix) + 27
