"""Scope checks for the principal the resolver authenticated (see ``EngineResolver``)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from memory_engine.domain.auth import Principal, Scope
from memory_engine.errors import Unauthorized
from memory_engine.services.keys import authorize

#: Set by ``EngineResolver.resolve`` for the duration of one request.
current_principal: ContextVar[Principal | None] = ContextVar("current_principal", default=None)


def require(router: Any, scope: Scope) -> Principal:
    """The caller's principal if its key has ``scope``; raises Forbidden (403) otherwise.

    ``router`` is accepted for readability at call sites (``require(router, Scope.READ)``).
    """
    principal = current_principal.get()
    if principal is None:
        raise Unauthorized("missing Authorization header; send 'Authorization: Bearer <api key>'")
    return authorize(principal, scope)
