"""API keys and scopes: pure functions, no I/O."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from enum import Enum

KEY_PREFIX = "me_"  # raw keys look like me_<43 url-safe chars>


class Scope(str, Enum):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


@dataclass(frozen=True)
class Principal:
    """Who is calling: one project, some scopes. ``admin`` implies ``read`` and ``write``."""

    project_id: str
    key_id: str
    scopes: frozenset[Scope]

    def allows(self, scope: Scope) -> bool:
        return scope in self.scopes or Scope.ADMIN in self.scopes


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(raw_key: str) -> str:
    """sha256 hex of the key. Keys carry 256 bits of entropy, so a fast hash is safe here."""
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def hashes_match(stored_hash: str, raw_key: str) -> bool:
    return hmac.compare_digest(stored_hash, hash_key(raw_key))


def parse_scopes(value: str | list[str]) -> frozenset[Scope]:
    """Parse ``"read,write"``; raises ValueError naming an unknown scope."""
    items = value.split(",") if isinstance(value, str) else value
    scopes = set()
    for item in (i.strip().lower() for i in items):
        if not item:
            continue
        try:
            scopes.add(Scope(item))
        except ValueError:
            raise ValueError(f"unknown scope {item!r}; use read, write or admin") from None
    if not scopes:
        raise ValueError("at least one scope is required")
    return frozenset(scopes)
