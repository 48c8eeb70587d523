"""The outbound-call rule (HOUSE_STYLE rule 19): which addresses the engine connects to on a tenant's
behalf (the ``http`` converters of ingestion rules).

A tenant's URL may name anything, so the engine refuses every address that is not a public unicast
one: loopback, private (RFC 1918), shared (CGNAT, 100.64.0.0/10), link-local (169.254.0.0/16 with the
cloud metadata services at 169.254.169.254 and 169.254.170.2, fe80::/10), unique-local (fc00::/7),
multicast, unspecified (0.0.0.0, ::), reserved and documentation ranges, and the IPv6 forms that carry
one of those (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96``,
6to4 ``2002::/16``). A host written as an unusual IPv4 spelling (``2130706433``, ``0x7f.1``, ``0177.0.0.1``,
``0``) is read the way the C library reads it, so it cannot slip past as a "name". Metadata host names
(``metadata.google.internal``, ...) and ``localhost`` are refused by name. So is the engine's own
origin (its host and port), even on a host the operator allows.

The operator opens exceptions with ``CONVERTER_ALLOWED_HOSTS``: ``host`` (any port but the engine's
own) or ``host:port`` (exactly that), comma-separated. An allowed host is matched as written in the
URL (a name, or an IP address in any spelling), never by what it resolves to.

Pure: the adapter (``adapters/outbound``) resolves names and applies :func:`check_target` to every
address it would connect to, at rule-write time and again at call time.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Host names of instance-metadata services and of the machine itself, refused whatever they resolve to.
METADATA_HOSTNAMES = frozenset({
    "localhost", "metadata", "metadata.google.internal", "metadata.goog", "instance-data",
    "instance-data.ec2.internal", "metadata.azure.internal", "metadata.tencentyun.com",
})
DEFAULT_PORTS = {"http": 80, "https": 443}

_V4_CLASSES: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "an unspecified address"),
    ("127.0.0.0/8", "a loopback address"),
    ("10.0.0.0/8", "a private address"),
    ("172.16.0.0/12", "a private address"),
    ("192.168.0.0/16", "a private address"),
    ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
    ("169.254.0.0/16", "a link-local (cloud metadata) address"),
    ("224.0.0.0/4", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),
)
_V6_CLASSES: tuple[tuple[str, str], ...] = (
    ("::/128", "an unspecified address"),
    ("::1/128", "a loopback address"),
    ("fc00::/7", "a unique-local address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
    ("ff00::/8", "a multicast address"),
)
_V4_NETWORKS = tuple((ipaddress.IPv4Network(net), why) for net, why in _V4_CLASSES)
_V6_NETWORKS = tuple((ipaddress.IPv6Network(net), why) for net, why in _V6_CLASSES)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")


class OutboundRefused(ValueError):
    """The engine will not connect there; ``reason`` says why (no peer bytes, nothing secret)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def ipv4_spelling(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``host`` spells the way ``inet_aton`` reads it (1 to 4 dot-separated parts,
    each decimal, ``0x`` hex or ``0``-prefixed octal; the last part fills the remaining bytes), else
    None: ``"2130706433"``, ``"0x7f.1"``, ``"0177.0.0.1"`` and ``"0"`` are all addresses."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        try:
            if part[:2].lower() == "0x":
                values.append(int(part[2:], 16) if part[2:] else 0)
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            elif part.isdigit():
                values.append(int(part))
            else:
                return None
        except ValueError:
            return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = last
    for i, value in enumerate(head):
        number += value << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def host_address(host: str) -> IPAddress | None:
    """The address ``host`` (as a URL carries it, brackets optional) is written as, else None (a name)."""
    bare = host.strip("[]")
    if ":" in bare:
        try:
            return ipaddress.IPv6Address(bare.split("%", 1)[0])
        except ValueError:
            return None
    return ipv4_spelling(bare)


def address_refusal(address: IPAddress) -> str | None:
    """Why the engine must not connect to ``address`` ("a loopback address", "an IPv4-mapped private
    address", ...), or None for a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded, form = _embedded_v4(address)
        if embedded is not None:
            inner = address_refusal(embedded)
            return f"{form} {inner.removeprefix('an ').removeprefix('a ')}" if inner else None
        for network, why in _V6_NETWORKS:
            if address in network:
                return why
    else:
        for network4, why in _V4_NETWORKS:
            if address in network4:
                return why
    if not address.is_global:
        return "a reserved or non-public address"
    return None


def _embedded_v4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address | None, str]:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped, "an IPv4-mapped"
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "a NAT64"
    if address.sixtofour is not None:
        return address.sixtofour, "a 6to4"
    if address in _V4_COMPATIBLE and int(address) > 1:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "an IPv4-compatible"
    return None, ""


def normalize_host(host: str) -> str:
    """A URL's host as compared: lowercase, no brackets, no trailing dot; an IP address in its
    canonical form (``2130706433`` -> ``127.0.0.1``, ``[::FFFF:7f00:1]`` -> ``::ffff:7f00:1``)."""
    bare = host.strip().strip("[]").rstrip(".").lower()
    address = host_address(bare)
    return str(address) if address is not None else bare


@dataclass(frozen=True)
class Target:
    """Where a URL points: normalized host and port."""

    host: str
    port: int

    @classmethod
    def of_url(cls, url: str) -> Target:
        """Raises OutboundRefused for a URL without an http(s) scheme, a host or a valid port."""
        parts = urlsplit(url.strip())
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            raise OutboundRefused("the URL is not an absolute http:// or https:// URL with a host")
        try:
            port = parts.port or DEFAULT_PORTS[parts.scheme]
        except ValueError:
            raise OutboundRefused("the URL has an invalid port") from None
        return cls(normalize_host(parts.hostname), port)


@dataclass(frozen=True)
class OutboundPolicy:
    """``allowed``: the operator's exceptions, ``(host, port or None)``; ``own``: the engine's own
    origin(s), refused unless allowed with their exact port."""

    allowed: frozenset[tuple[str, int | None]] = frozenset()
    own: frozenset[Target] = frozenset()

    @staticmethod
    def parse_allowed(text: str) -> frozenset[tuple[str, int | None]]:
        """``"converter.internal, 10.0.0.5:8080, [fd00::1]:443"`` -> entries. Raises ValueError
        naming the entry that is not ``host`` or ``host:port``."""
        entries: set[tuple[str, int | None]] = set()
        for raw in (item.strip() for item in text.split(",")):
            if not raw:
                continue
            host, port = raw, None
            if raw.startswith("["):
                host, closed, rest = raw[1:].partition("]")
                if not closed or ":" not in host or (rest and not rest.startswith(":")):
                    raise ValueError(f"CONVERTER_ALLOWED_HOSTS entry {raw!r} is not host or host:port")
                port_text = rest[1:] if rest else None
            elif raw.count(":") == 1:
                host, port_text = raw.split(":")
            elif raw.count(":") > 1:
                port_text = None  # a bare IPv6 address
            else:
                port_text = None
            if port_text is not None:
                if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                    raise ValueError(f"CONVERTER_ALLOWED_HOSTS entry {raw!r} has an invalid port")
                port = int(port_text)
            if not host or any(ch.isspace() or ch in "/@?#" for ch in host):
                raise ValueError(f"CONVERTER_ALLOWED_HOSTS entry {raw!r} is not host or host:port")
            entries.add((normalize_host(host), port))
        return frozenset(entries)

    def allows(self, target: Target) -> bool:
        return (target.host, None) in self.allowed or self.allows_exactly(target)

    def allows_exactly(self, target: Target) -> bool:
        return (target.host, target.port) in self.allowed


def check_target(target: Target, addresses: Iterable[IPAddress], policy: OutboundPolicy) -> None:
    """Raises OutboundRefused unless the engine may connect to ``target`` at every one of
    ``addresses`` (what its name resolved to; none when it could not be resolved yet)."""
    addresses = list(addresses)
    if not policy.allows_exactly(target) and _is_own(target, addresses, policy):
        raise OutboundRefused(f"port {target.port} of {target.host} is the engine's own API")
    if policy.allows(target):
        return
    if target.host in METADATA_HOSTNAMES or target.host.endswith(".localhost"):
        raise OutboundRefused(f"{target.host} is a metadata or local host name")
    literal = host_address(target.host)
    for address in [literal] if literal is not None else addresses:
        why = address_refusal(address)
        if why is not None:
            shown = "" if literal is not None else f" (it resolves to {address})"
            raise OutboundRefused(f"{target.host}{shown} is {why}")


def _is_own(target: Target, addresses: list[IPAddress], policy: OutboundPolicy) -> bool:
    for own in policy.own:
        if own.port != target.port:
            continue
        if own.host == target.host:
            return True
        own_address = host_address(own.host)
        for address in addresses or [a for a in [host_address(target.host)] if a is not None]:
            if address == own_address or address.is_loopback or address.is_unspecified:
                return True
            mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
            if mapped is not None and (mapped == own_address or mapped.is_loopback or mapped.is_unspecified):
                return True
    return False
