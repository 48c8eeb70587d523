"""The outbound guard: resolves a host with the system resolver (or an injected one) and applies
:func:`memory_engine.domain.outbound.check_target` to every address."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

import httpcore

from memory_engine.adapters.outbound.deadline import deadline, within_deadline
from memory_engine.domain.outbound import IPAddress, OutboundPolicy, OutboundRefused, Target, check_target, host_address

#: ``(host, port) -> addresses``; raises OSError when the name does not resolve.
Resolver = Callable[[str, int], list[IPAddress]]
#: How long a rule write waits for the converter's name to resolve; a name that takes longer is
#: treated as not resolvable yet (the call-time check decides), so a slow name server cannot hold
#: an API worker.
WRITE_CHECK_RESOLVE_SECONDS = 3.0


def system_resolver(host: str, port: int) -> list[IPAddress]:
    """The addresses of ``host`` by ``getaddrinfo`` (TCP), in the order the resolver gives them."""
    found: list[IPAddress] = []
    for family, _, _, _, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        if family in (socket.AF_INET, socket.AF_INET6):
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if address not in found:
                found.append(address)
    return found


class ResolvingOutboundGuard:
    """Implements :class:`memory_engine.ports.outbound.OutboundGuard`. ``allowed`` is the operator's
    ``CONVERTER_ALLOWED_HOSTS``; ``own_origins`` returns the engine's own URL(s), read at each check
    (locally the engine learns its port once it listens)."""

    def __init__(self, allowed: str = "", *, own_origins: Callable[[], list[str]] = list,
                 resolve: Resolver = system_resolver) -> None:
        self._allowed = OutboundPolicy.parse_allowed(allowed)
        self._own_origins = own_origins
        self._resolve = resolve

    def _policy(self) -> OutboundPolicy:
        own: set[Target] = set()
        for origin in self._own_origins():
            try:
                own.add(Target.of_url(origin))
            except OutboundRefused:
                continue
        return OutboundPolicy(allowed=self._allowed, own=frozenset(own))

    def check_url(self, url: str) -> None:
        target = Target.of_url(url)
        addresses: list[IPAddress] = []
        if host_address(target.host) is None:
            try:
                with deadline(WRITE_CHECK_RESOLVE_SECONDS):
                    addresses = within_deadline(lambda: self._resolve(target.host, target.port))
            except (OSError, UnicodeError, httpcore.ConnectTimeout):
                addresses = []  # not resolvable now: the call-time check decides
        check_target(target, addresses, self._policy())

    def vetted_addresses(self, host: str, port: int) -> list[IPAddress]:
        target = Target(host=Target.of_url(f"http://{_bracketed(host)}:{port}/").host, port=port)
        literal = host_address(target.host)
        addresses = [literal] if literal is not None else self._resolve(target.host, port)
        if not addresses:
            raise OSError(f"{host} has no address")
        check_target(target, addresses, self._policy())
        return addresses


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
