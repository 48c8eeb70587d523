"""The outbound-call guard port (HOUSE_STYLE rule 19): every URL the engine calls on a tenant's
behalf is checked here, when it is written and again when it is called."""

from __future__ import annotations

from typing import Protocol

from memory_engine.domain.outbound import IPAddress


class OutboundGuard(Protocol):
    """Decides where the engine may connect (:mod:`memory_engine.domain.outbound` is the rule)."""

    def check_url(self, url: str) -> None:
        """The write-time check of a URL a tenant stores (a converter URL). Raises
        ``OutboundRefused`` naming the reason; a name that does not resolve yet is accepted (the
        call-time check refuses it then if it must)."""
        ...

    def vetted_addresses(self, host: str, port: int) -> list[IPAddress]:
        """The call-time check: ``host`` resolved, every address checked; the addresses to connect
        to (connect to these, never resolve again). Raises ``OutboundRefused``, or ``OSError``
        when the name does not resolve."""
        ...
