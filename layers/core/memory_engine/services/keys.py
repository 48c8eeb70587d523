"""Use cases for projects and API keys: mint, authenticate, authorize, revoke."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from memory_engine.domain.auth import KEY_PREFIX, Principal, Scope, generate_key, hash_key, hashes_match
from memory_engine.errors import Forbidden, NotFound, Unauthorized
from memory_engine.ports.projects import ApiKeyRecord, ProjectRepository


@dataclass(frozen=True)
class MintedKey:
    raw_key: str  # shown once, never stored
    record: ApiKeyRecord


def create_api_key(
    repo: ProjectRepository, *, project_name: str, scopes: frozenset[Scope], name: str | None = None
) -> MintedKey:
    """Create the project if needed and mint a key for it. Only the key's hash is stored."""
    project = repo.get_or_create_project(project_name)
    raw = generate_key()
    record = repo.insert_key(
        project_id=project.id, name=name, key_prefix=raw[: len(KEY_PREFIX) + 6], key_hash=hash_key(raw), scopes=scopes
    )
    return MintedKey(raw_key=raw, record=record)


def revoke_api_key(repo: ProjectRepository, key_id: str) -> None:
    if not repo.revoke_key(key_id):
        raise NotFound(f"no active API key {key_id!r}")


class Authenticator:
    """Resolves a bearer key to a :class:`Principal`, caching hits briefly per process.

    Raises :class:`Unauthorized` for a missing, unknown or revoked key. The cache spares one
    database lookup per request; its price is that revocation takes effect within
    ``ttl_seconds`` in every process (each warm Lambda container, the local server). The
    composition root sets it from ``MEMORY_ENGINE_KEY_CACHE_SECONDS`` (default 5 s locally,
    30 s on AWS; 0 disables the cache). Misses are never cached.
    """

    def __init__(self, repo: ProjectRepository, *, ttl_seconds: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._repo = repo
        self._ttl = ttl_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, Principal]] = {}

    def authenticate(self, authorization: str | None) -> Principal:
        raw = _bearer(authorization)
        digest = hash_key(raw)
        cached = self._cache.get(digest)
        now = self._clock()
        if cached and now - cached[0] < self._ttl:
            return cached[1]
        record = self._repo.find_key_by_hash(digest)
        if record is None or record.revoked_at is not None or not hashes_match(record.key_hash, raw):
            self._cache.pop(digest, None)
            raise Unauthorized("invalid API key")
        self._repo.touch_key(record.id)
        principal = Principal(project_id=record.project_id, key_id=record.id, scopes=record.scopes)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (now, principal)
        return principal


def authorize(principal: Principal, scope: Scope) -> Principal:
    if not principal.allows(scope):
        raise Forbidden(f"this API key lacks the {scope.value!r} scope", details={"required_scope": scope.value})
    return principal


def _bearer(authorization: str | None) -> str:
    if not authorization:
        raise Unauthorized("missing Authorization header; send 'Authorization: Bearer <api key>'")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("malformed Authorization header; send 'Authorization: Bearer <api key>'")
    return token.strip()
