"""An httpx transport that connects only where the outbound guard allows, within one deadline.

* **Pinned connections.** The connection pool's network backend asks the guard for the vetted
  addresses of the URL's host (resolved once, every address checked) and connects to those IPs
  itself, so a name that resolves elsewhere a moment later (DNS rebinding) is never connected to.
  The URL keeps its host: the ``Host`` header and, for https, the TLS server name (SNI) and the
  certificate check are the host's, not the IP's.
* **One deadline for the whole answer.** :func:`deadline` (:mod:`.deadline`) sets an absolute time
  for everything the calling thread does through this transport (resolving, connecting, TLS, sending,
  the status line, headers and the whole body): every socket operation waits at most the time left,
  so a peer dripping one byte at a time cannot stretch a call past it.
* No proxies from the environment, no redirects (httpx follows none unless asked), no keep-alive:
  each call resolves and checks again.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from memory_engine.adapters.outbound.deadline import DeadlineStream, bounded, deadline, within_deadline
from memory_engine.ports.outbound import OutboundGuard

__all__ = ["GuardedNetworkBackend", "GuardedTransport", "deadline", "guarded_client"]

class GuardedNetworkBackend(httpcore.NetworkBackend):
    """Connects to the guard's vetted addresses of ``host`` (in order, the first that answers)."""

    def __init__(self, guard: OutboundGuard, inner: httpcore.NetworkBackend | None = None) -> None:
        self._guard = guard
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        try:
            addresses = within_deadline(lambda: self._guard.vetted_addresses(host, port))
        except OSError as exc:
            raise httpcore.ConnectError(f"the name does not resolve ({exc.strerror or exc})") from exc
        failure: httpcore.ConnectError | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(str(address), port, timeout=bounded(timeout, httpcore.ConnectTimeout),
                                                 local_address=local_address, socket_options=socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
                continue
            return DeadlineStream(stream)
        assert failure is not None
        raise failure

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("outbound calls connect over TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


_EXCEPTIONS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout), (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout), (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.ConnectError, httpx.ConnectError), (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError), (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError), (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.NetworkError, httpx.NetworkError), (httpcore.TimeoutException, httpx.TimeoutException),
)


@contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except httpcore.UnsupportedProtocol as exc:
        raise httpx.UnsupportedProtocol(str(exc)) from exc
    except Exception as exc:
        for core, mapped in _EXCEPTIONS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore pool whose network backend is :class:`GuardedNetworkBackend`."""

    def __init__(self, guard: OutboundGuard, *, ssl_context: ssl.SSLContext | None = None,
                 network_backend: httpcore.NetworkBackend | None = None) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or ssl.create_default_context(), max_keepalive_connections=0,
            network_backend=GuardedNetworkBackend(guard, network_backend),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
                             target=request.url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions,
        )
        with _httpx_errors():
            response = self._pool.handle_request(core)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(status_code=response.status, headers=response.headers, stream=_Body(response.stream),
                              extensions=response.extensions)

    def close(self) -> None:
        self._pool.close()


def guarded_client(guard: OutboundGuard) -> httpx.Client:
    """An httpx client whose every connection goes through ``guard``: no environment proxies, no
    redirects followed."""
    return httpx.Client(transport=GuardedTransport(guard), trust_env=False, follow_redirects=False)
