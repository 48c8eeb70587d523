"""The outbound-call rule (issue 34, defect 1): every address form a converter URL can use to reach
inside the engine's network is refused, the operator's CONVERTER_ALLOWED_HOSTS opens exactly what it
names, and the engine's own origin stays refused."""

from __future__ import annotations

import ipaddress

import pytest

from memory_engine.domain.outbound import (
    OutboundPolicy,
    OutboundRefused,
    Target,
    check_target,
    host_address,
    ipv4_spelling,
)

#: Every form the issue lists (and the neighbours of each), as a converter URL would carry it.
REFUSED_URLS = [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",  # EC2 instance metadata
    "http://169.254.170.2/v2/credentials/",  # ECS / Lambda container credentials
    "http://[fd00:ec2::254]/latest/meta-data/",  # EC2 metadata over IPv6 (unique-local)
    "http://127.0.0.1:8000/v1/memories",  # the engine's own port on loopback
    "http://127.0.0.1:9001/2018-06-01/runtime/invocation/next",  # the Lambda runtime API
    "http://localhost:5432/",
    "http://LOCALHOST./",
    "http://db.localhost/",
    "http://[::1]:8000/",
    "http://0/",
    "http://0.0.0.0:8000/",
    "http://[::]/",
    "http://2130706433:8000/",  # decimal loopback
    "http://0x7f000001/",  # hex loopback
    "http://0177.0.0.1/",  # octal loopback
    "http://0x7f.1/",
    "http://127.1/",
    "http://[::ffff:127.0.0.1]:8000/",  # IPv4-mapped loopback
    "http://[::ffff:7f00:1]/",
    "http://[0:0:0:0:0:ffff:a9fe:a9fe]/",  # IPv4-mapped metadata
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 metadata
    "http://[2002:7f00:1::]/",  # 6to4 of loopback
    "http://[::127.0.0.1]/",  # IPv4-compatible loopback
    "http://10.40.0.12:5432/",  # the VPC (RDS proxy)
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",  # carrier-grade NAT
    "http://169.254.1.1/",
    "http://[fe80::1]/",  # link-local
    "http://[fc00::1]/",  # unique-local
    "http://224.0.0.1/",  # multicast
    "http://[ff02::1]/",
    "http://240.0.0.1/",  # reserved
    "http://255.255.255.255/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.GOOGLE.INTERNAL./computeMetadata/v1/",
    "http://metadata/",
    "http://instance-data.ec2.internal/",
    "http://metadata.azure.internal/",
]


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_every_internal_address_form_is_refused(url: str) -> None:
    # Given the default policy (CONVERTER_ALLOWED_HOSTS empty), When the URL is checked (a name that
    # happens to resolve to a public address does not save a metadata name)
    target = Target.of_url(url)
    public = [ipaddress.ip_address("93.184.216.34")]
    # Then it is refused, saying what kind of address it is
    with pytest.raises(OutboundRefused) as refused:
        check_target(target, public if host_address(target.host) is None else [], OutboundPolicy())
    assert refused.value.reason


@pytest.mark.parametrize("resolved", ["127.0.0.1", "10.0.0.7", "169.254.169.254", "::1", "fd00::5",
                                      "::ffff:192.168.0.1", "0.0.0.0"])
def test_a_public_looking_name_that_resolves_inside_is_refused(resolved: str) -> None:
    # Given a name whose resolution holds one internal address among public ones
    addresses = [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address(resolved)]
    # When it is checked, Then it is refused naming the address it resolved to
    with pytest.raises(OutboundRefused, match=f"resolves to {ipaddress.ip_address(resolved)}"):
        check_target(Target.of_url("https://converter.example.com/convert"), addresses, OutboundPolicy())


@pytest.mark.parametrize("url", ["https://converter.example.com/convert", "http://93.184.216.34:8080/x",
                                 "http://[2606:2800:220:1:248:1893:25c8:1946]/"])
def test_public_addresses_pass(url: str) -> None:
    target = Target.of_url(url)
    resolved = [] if host_address(target.host) else [ipaddress.ip_address("93.184.216.34")]
    check_target(target, resolved, OutboundPolicy())


@pytest.mark.parametrize(("spelling", "address"), [
    ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
    ("0x7f.0.1", "127.0.0.1"), ("0", "0.0.0.0"), ("10.1", "10.0.0.1"), ("169.254.43518", "169.254.169.254"),
])
def test_unusual_ipv4_spellings_are_read_as_the_c_library_reads_them(spelling: str, address: str) -> None:
    assert ipv4_spelling(spelling) == ipaddress.IPv4Address(address)


@pytest.mark.parametrize("name", ["example.com", "1.2.3.4.5", "256.1.1.1", "08.1.1.1", "1e3", "", "1.2.3.256"])
def test_names_and_impossible_numbers_are_not_addresses(name: str) -> None:
    assert ipv4_spelling(name) is None


def test_allowed_hosts_open_exactly_what_they_name() -> None:
    # Given CONVERTER_ALLOWED_HOSTS with a bare host, a host:port and a bracketed IPv6 address
    policy = OutboundPolicy(allowed=OutboundPolicy.parse_allowed(
        "converter.internal, 127.0.0.1:9100 ,[fd00::1]:443, 2130706433:9200"))
    internal = [ipaddress.ip_address("10.0.0.9")]
    # Then a bare host is allowed on any port, whatever it resolves to
    check_target(Target.of_url("http://converter.internal:81/"), internal, policy)
    # And host:port only on that port (any spelling of the address)
    check_target(Target.of_url("http://127.0.0.1:9100/"), [], policy)
    check_target(Target.of_url("http://2130706433:9100/"), [], policy)
    check_target(Target.of_url("https://[fd00::1]/"), [], policy)
    check_target(Target.of_url("http://127.0.0.1:9200/"), [], policy)
    for url in ("http://127.0.0.1:9101/", "http://[fd00::1]:80/", "http://other.internal/"):
        with pytest.raises(OutboundRefused):
            check_target(Target.of_url(url), internal, policy)


@pytest.mark.parametrize("entry", ["http://x", "host:port", "host:0", "a b", "[::1", "user@host", "host:70000"])
def test_a_malformed_allowed_hosts_entry_is_refused_naming_it(entry: str) -> None:
    with pytest.raises(ValueError, match="CONVERTER_ALLOWED_HOSTS entry"):
        OutboundPolicy.parse_allowed(f"ok.example, {entry}")


def test_the_engines_own_origin_is_refused_even_on_an_allowed_host() -> None:
    # Given the engine serving on 127.0.0.1:8000 and the operator allowing all of 127.0.0.1
    own = frozenset({Target.of_url("http://127.0.0.1:8000")})
    policy = OutboundPolicy(allowed=OutboundPolicy.parse_allowed("127.0.0.1,converter.test"), own=own)
    # When a converter URL names the engine's port by any loopback spelling, Then it is refused
    for url in ("http://127.0.0.1:8000/v1/memories", "http://2130706433:8000/", "http://[::ffff:127.0.0.1]:8000/"):
        with pytest.raises(OutboundRefused, match="engine's own API"):
            check_target(Target.of_url(url), [], policy)
    # And so is an allowed name that resolves to it
    with pytest.raises(OutboundRefused, match="engine's own API"):
        check_target(Target.of_url("http://converter.test:8000/"), [ipaddress.ip_address("127.0.0.1")], policy)
    # While another port of the allowed host is fine, and naming host:port exactly opens even the own port
    check_target(Target.of_url("http://127.0.0.1:9100/"), [], policy)
    exact = OutboundPolicy(allowed=OutboundPolicy.parse_allowed("127.0.0.1:8000"), own=own)
    check_target(Target.of_url("http://127.0.0.1:8000/"), [], exact)


@pytest.mark.parametrize("url", ["ftp://example.com/", "http:///nohost", "http://example.com:99999/", "file:///etc/passwd"])
def test_a_url_that_is_not_http_with_a_host_is_refused(url: str) -> None:
    with pytest.raises(OutboundRefused):
        Target.of_url(url)


def test_a_malformed_allowed_hosts_setting_stops_the_engine_at_start_naming_the_entry() -> None:
    from pydantic import ValidationError

    from memory_engine.settings import Settings

    with pytest.raises(ValidationError, match="'converter:port'"):
        Settings(CONVERTER_ALLOWED_HOSTS="ok.example,converter:port")
    assert Settings(CONVERTER_ALLOWED_HOSTS="ok.example, 127.0.0.1:9000").converter_allowed_hosts
