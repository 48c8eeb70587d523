"""The ``http`` converter of ingestion rules: POST the converter protocol's JSON request
(:mod:`memory_engine.domain.converter_protocol`), read the answer, capped in size and time."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any

from memory_engine.domain.converter_protocol import MAX_ANSWER_BYTES
from memory_engine.domain.ingestion_errors import ConverterFailed


class HttpConverter:
    """Implements :class:`memory_engine.ports.extractors.Converter` with the standard library.
    Redirects are not followed (a converter answers where the rule points)."""

    def send(self, url: str, payload: dict[str, Any], *, headers: dict[str, str], timeout_s: float) -> bytes:
        if not url.startswith(("http://", "https://")):
            raise ConverterFailed(f"converter URL {url!r} is not http(s); fix the ingestion rule")
        request = urllib.request.Request(  # noqa: S310 - scheme checked above
            url, data=json.dumps(payload).encode(), method="POST",
            headers={**headers, "content-type": "application/json", "accept": "application/json"},
        )
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=timeout_s) as response:
                return bytes(response.read(MAX_ANSWER_BYTES + 1))
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace")
            raise ConverterFailed(f"the converter at {url} answered HTTP {exc.code}: {detail}; check the converter") from exc
        except TimeoutError as exc:
            raise ConverterFailed(f"the converter at {url} did not answer within {timeout_s:g} s (the rule's timeout_s); "
                                  'answer faster, or answer {"status": "pending"} and deliver the pages to the '
                                  "callback_url") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError | socket.timeout):
                raise ConverterFailed(f"the converter at {url} did not answer within {timeout_s:g} s (the rule's "
                                      "timeout_s)") from exc
            raise ConverterFailed(f"the converter at {url} could not be reached ({exc.reason}); "
                                  "check that it is running") from exc
        except OSError as exc:
            raise ConverterFailed(f"the converter at {url} failed ({exc}); check the converter") from exc


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None
