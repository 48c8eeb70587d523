"""One deadline for everything a guarded call does (issue 34, defect 3a: ``timeout_s`` bounds the
whole answer, not each socket read).

:func:`deadline` sets an absolute end time for the calling thread. Then every socket operation of a
:class:`DeadlineStream` waits at most the time left, so a peer dripping one byte at a time gets no
fresh timeout per read (a TLS handshake is one such operation: CPython bounds the whole handshake by
the socket's timeout), and the name lookup (:func:`within_deadline`) runs on a helper thread the
caller stops waiting for at the end.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import httpcore

_DEADLINE: ContextVar[float | None] = ContextVar("outbound_deadline", default=None)
#: Name lookups of guarded calls (``getaddrinfo`` cannot be interrupted): a lookup that outlives its
#: caller's deadline finishes here unattended.
_RESOLVERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="outbound-resolve")
EXPIRED = "the deadline for the whole answer passed"
T = TypeVar("T")


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Everything this thread does through a guarded transport inside the block ends within
    ``seconds`` (``httpx.TimeoutException`` otherwise)."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def bounded(timeout: float | None, error: type[httpcore.TimeoutException]) -> float | None:
    """``timeout`` cut to the time left before the deadline; raises ``error`` once it passed."""
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error(EXPIRED)
    return left if timeout is None else min(timeout, left)


def within_deadline(call: Callable[[], T]) -> T:
    """``call()`` (a blocking lookup), given up with ``httpcore.ConnectTimeout`` at the deadline."""
    left = bounded(None, httpcore.ConnectTimeout)
    if left is None:
        return call()
    future = _RESOLVERS.submit(call)
    try:
        return future.result(timeout=left)
    except FutureTimeout:
        future.cancel()  # when still queued behind other stuck lookups
        raise httpcore.ConnectTimeout(EXPIRED) from None


class DeadlineStream(httpcore.NetworkStream):
    """``inner`` with every operation bounded by the calling thread's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                    bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
