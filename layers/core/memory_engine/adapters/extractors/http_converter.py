"""The ``http`` converter of ingestion rules: POST the converter protocol's JSON request
(:mod:`memory_engine.domain.converter_protocol`), read the answer, capped in size and time.

Every call goes through the outbound guard (:mod:`memory_engine.adapters.outbound`): the converter's
host is resolved and checked, and the connection is made to the checked address. ``timeout_s`` is a
deadline on the whole answer (connect, send, status, headers and body). A failure says what failed
(refused address, status code, timeout, not HTTP) and never quotes what the peer sent."""

from __future__ import annotations

import json
from typing import Any

import httpx

from memory_engine.adapters.outbound.deadline import deadline
from memory_engine.adapters.outbound.transport import guarded_client
from memory_engine.domain.converter_protocol import MAX_ANSWER_BYTES
from memory_engine.domain.ingestion_errors import ConverterFailed
from memory_engine.domain.outbound import OutboundRefused
from memory_engine.ports.outbound import OutboundGuard


class HttpConverter:
    """Implements :class:`memory_engine.ports.extractors.Converter` with httpx over the guarded
    transport (``client`` defaults to :func:`guarded_client` of ``guard``). Redirects are not
    followed: a converter answers where the rule points, and a 3xx fails naming its status."""

    def __init__(self, guard: OutboundGuard, client: httpx.Client | None = None) -> None:
        self._client = client or guarded_client(guard)

    def send(self, url: str, payload: dict[str, Any], *, headers: dict[str, str], timeout_s: float) -> bytes:
        if not url.startswith(("http://", "https://")):
            raise ConverterFailed(f"converter URL {url!r} is not http(s); fix the ingestion rule")
        body = json.dumps(payload).encode()
        sent = {**headers, "content-type": "application/json", "accept": "application/json",
                "accept-encoding": "identity"}
        try:
            with deadline(timeout_s), self._client.stream("POST", url, content=body, headers=sent,
                                                          timeout=timeout_s) as response:
                if not 200 <= response.status_code < 300:
                    moved = " (redirects are not followed: point the rule at the final URL)" \
                        if 300 <= response.status_code < 400 else ""
                    raise ConverterFailed(f"the converter at {url} answered HTTP {response.status_code}{moved}; "
                                          "check the converter")
                return _read_capped(response)
        except OutboundRefused as exc:
            raise ConverterFailed(f"the converter at {url} was not called: {exc.reason}; converters must be "
                                  "public addresses unless the operator allows the host in "
                                  "CONVERTER_ALLOWED_HOSTS") from exc
        except httpx.InvalidURL as exc:  # e.g. an IPv4 spelling httpx does not read (``0177.0.0.1``)
            raise ConverterFailed(f"the converter at {url} was not called: its host is not a valid name or "
                                  "address; fix the ingestion rule") from exc
        except httpx.TimeoutException as exc:
            raise ConverterFailed(f"the converter at {url} did not answer within {timeout_s:g} s (the rule's "
                                  "timeout_s, a deadline on the whole answer); answer faster, or answer "
                                  '{"status": "pending"} and deliver the pages to the callback_url') from exc
        except httpx.ConnectError as exc:
            raise ConverterFailed(f"the converter at {url} could not be reached ({exc}); "
                                  "check that it is running") from exc
        except (httpx.RemoteProtocolError, httpx.DecodingError) as exc:
            raise ConverterFailed(f"the converter at {url} did not answer valid HTTP; fix the converter") from exc
        except httpx.HTTPError as exc:
            raise ConverterFailed(f"the converter at {url} failed ({type(exc).__name__}); "
                                  "check the converter") from exc


def _read_capped(response: httpx.Response) -> bytes:
    """At most ``MAX_ANSWER_BYTES + 1`` bytes of the body (the caller refuses more)."""
    data = bytearray()
    for chunk in response.iter_raw():
        data += chunk
        if len(data) > MAX_ANSWER_BYTES:
            break
    return bytes(data[: MAX_ANSWER_BYTES + 1])
