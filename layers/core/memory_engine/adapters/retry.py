"""Retry with exponential backoff and full jitter, for throttled calls to AWS and HTTP models."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def with_backoff(
    call: Callable[[], T],
    *,
    retry_on: Callable[[BaseException], bool],
    attempts: int = 5,
    base_delay: float = 0.2,
    max_delay: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``call``; on an error for which ``retry_on`` is true, wait and try again."""
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            if attempt == attempts or not retry_on(exc):
                raise
            sleep(random.uniform(0, min(max_delay, base_delay * 2 ** (attempt - 1))))
    raise AssertionError("unreachable")
