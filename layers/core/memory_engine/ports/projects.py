"""Repository port for projects and API keys."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memory_engine.domain.auth import Scope


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    created_at: datetime


@dataclass(frozen=True)
class ApiKeyRecord:
    id: str
    project_id: str
    name: str | None
    key_prefix: str
    key_hash: str
    scopes: frozenset[Scope]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class ProjectRepository(Protocol):
    def get_or_create_project(self, name: str) -> Project:
        """Raises InvalidInput when ``name`` is not a project slug (``domain.validation.project_name``)."""
        ...

    def get_project(self, name_or_id: str) -> Project | None: ...
    def list_projects(self) -> list[Project]: ...
    def insert_key(
        self, *, project_id: str, name: str | None, key_prefix: str, key_hash: str, scopes: frozenset[Scope]
    ) -> ApiKeyRecord: ...
    def find_key_by_hash(self, key_hash: str) -> ApiKeyRecord | None: ...
    def list_keys(self, project_id: str | None = None) -> list[ApiKeyRecord]: ...
    def revoke_key(self, key_id: str) -> bool: ...
    def touch_key(self, key_id: str) -> None: ...
