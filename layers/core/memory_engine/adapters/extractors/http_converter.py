"""The HTTP converter of ingestion rules: POST the file, get pages of text back.

Request (JSON): ``{"content_type", "name", "data_base64"}``.
Response (JSON): ``{"pages": [{"page": 1, "text": "..."}, ...]}`` or ``{"pages": ["...", ...]}``
or ``{"text": "..."}``. Anything else is ``ConverterFailed`` with what was received.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

from memory_engine.domain.chunking import normalize_text
from memory_engine.domain.documents import Page
from memory_engine.domain.ingestion_errors import ConverterFailed


def parse_pages(body: Any) -> list[Page]:
    if isinstance(body, dict) and isinstance(body.get("text"), str):
        return [Page(number=None, text=normalize_text(body["text"]))]
    raw = body.get("pages") if isinstance(body, dict) else None
    if not isinstance(raw, list):
        raise ConverterFailed("the converter's answer has neither `pages` (a list) nor `text`; fix the converter")
    pages = []
    for i, item in enumerate(raw, start=1):
        if isinstance(item, str):
            pages.append(Page(number=i, text=normalize_text(item)))
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            number = item.get("page", i)
            pages.append(Page(number=int(number) if isinstance(number, int) else i, text=normalize_text(item["text"])))
        else:
            raise ConverterFailed(f"page {i} of the converter's answer is not text; fix the converter")
    return pages


class HttpConverter:
    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout

    def convert(self, url: str, data: bytes, *, content_type: str, name: str) -> list[Page]:
        if not url.startswith(("http://", "https://")):
            raise ConverterFailed(f"converter URL {url!r} is not http(s); fix the ingestion rule")
        payload = json.dumps({
            "content_type": content_type, "name": name, "data_base64": base64.b64encode(data).decode(),
        }).encode()
        request = urllib.request.Request(  # noqa: S310 - scheme checked above
            url, data=payload, method="POST", headers={"content-type": "application/json", "accept": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise ConverterFailed(f"the converter at {url} answered HTTP {exc.code}: {detail}; check the converter") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise ConverterFailed(f"the converter at {url} could not be reached ({exc}); check that it is running") from exc
        except ValueError as exc:
            raise ConverterFailed(f"the converter at {url} did not answer JSON; fix the converter") from exc
        return parse_pages(body)
