"""Scope checks for the principal the resolver authenticated (see ``EngineResolver``)."""

from __future__ import annotations

from contextvars import ContextVar

from memory_engine.domain.auth import Principal, Scope
from memory_engine.errors import Unauthorized
from memory_engine.services.keys import authorize

#: Set by ``EngineResolver.resolve`` for the duration of one request.
current_principal: ContextVar[Principal | None] = ContextVar("current_principal", default=None)


def require(scope: Scope) -> Principal:
    """The principal of the request being served if its key has ``scope``. Raises Unauthorized (401)
    outside an authenticated request, Forbidden (403) when the key lacks the scope."""
    principal = current_principal.get()
    if principal is None:
        raise Unauthorized("missing Authorization header; send 'Authorization: Bearer <api key>'")
    return authorize(principal, scope)
