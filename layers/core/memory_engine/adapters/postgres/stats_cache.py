"""A per-process cache of the statistics search reads per scope (BM25's row count and mean lengths)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

_V = TypeVar("_V")

#: How long a scope's BM25 statistics (row count, mean length) are reused. They are statistics, not
#: results: a few minutes of writes move an idf by a negligible amount, and a result row is always
#: read live. (A table's lexeme shares are kept until the table is analyzed again: ``_keyword``.)
SCOPE_STATS_TTL_S = 300.0


class StatsCache(Generic[_V]):
    """A statistic per key (``(N, avgdl)`` per source, project and scope), computed at most once
    per TTL per process."""

    def __init__(self, ttl_s: float = SCOPE_STATS_TTL_S, max_entries: int = 1024) -> None:
        self._ttl = ttl_s
        self._max = max_entries
        self._lock = threading.Lock()
        self._entries: dict[tuple[Any, ...], tuple[float, _V]] = {}
        self._computing: dict[tuple[Any, ...], threading.Lock] = {}

    def _fresh(self, key: tuple[Any, ...]) -> _V | None:
        with self._lock:
            hit = self._entries.get(key)
            return hit[1] if hit is not None and time.monotonic() - hit[0] < self._ttl else None

    def get(self, key: tuple[Any, ...], compute: Callable[[], _V]) -> _V:
        """The cached value, or ``compute()`` once: the keyword and entity signals of one search ask
        for the same scope concurrently, and a cold count of a large scope is not run twice."""
        value = self._fresh(key)
        if value is not None:
            return value
        with self._lock:
            computing = self._computing.setdefault(key, threading.Lock())
        with computing:
            value = self._fresh(key)
            if value is None:
                value = compute()
                with self._lock:
                    if len(self._entries) >= self._max:
                        self._entries.clear()
                    self._entries[key] = (time.monotonic(), value)
        with self._lock:
            self._computing.pop(key, None)
        return value
