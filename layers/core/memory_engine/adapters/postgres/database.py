"""The PostgreSQL connection: a small psycopg pool with pgvector types registered."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from memory_engine.errors import DatabaseError, InvalidInput

logger = logging.getLogger(__name__)

#: Returns a fresh conninfo string; on AWS it mints an IAM token each time.
ConninfoFactory = Callable[[], str]
#: A row as every connection returns it.
Row = dict[str, Any]
Params = Sequence[Any] | dict[str, Any] | None


class Database:
    """Hands out connections with pgvector registered and rows as dicts.

    ``connection()`` yields a connection inside a transaction that commits on success and
    rolls back on error. psycopg errors are logged with the server's text and re-raised without
    it (a client never sees PostgreSQL's wording, which can echo values or schema): a data
    exception (SQLSTATE class 22, a value the column cannot hold) as :class:`InvalidInput`,
    anything else as :class:`DatabaseError` (503). Input validation (``domain.validation``) rejects
    such values before any SQL; the mapping is the backstop. Other errors (our own, raised from
    inside the block) pass through untouched.

    A restarted or unreachable server: every connection is checked before it is handed out, so
    the broken ones left by a restart are replaced instead of failing a request; while the server
    is down a request waits at most ``timeout`` seconds for a connection, then fails with
    :class:`DatabaseError`. The pool keeps reconnecting in the background, so requests succeed
    again once the server is back, without a restart.
    """

    def __init__(
        self,
        conninfo: str | ConninfoFactory,
        *,
        min_size: int = 1,
        max_size: int = 8,
        read_only: bool = False,
        timeout: float = 5.0,
        on_connect: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        self._factory: ConninfoFactory = conninfo if callable(conninfo) else (lambda: conninfo)
        self._read_only = read_only
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = timeout
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()
        self._vector_ready = False
        self._on_connect = on_connect

    @property
    def max_size(self) -> int:
        """The most connections the pool opens."""
        return self._max_size

    @property
    def timeout(self) -> float:
        """Seconds a request waits for a connection before it fails with :class:`DatabaseError`."""
        return self._timeout

    @property
    def conninfo(self) -> str:
        return self._factory()

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        if self._vector_ready:
            register_vector(conn)
        if self._read_only:
            conn.execute("SET default_transaction_read_only = on")
        # timestamps come back in UTC whatever the server's zone: a value near year 9999 stored
        # in UTC must not read back as year 10000 (which Python cannot hold) in a zone east of it
        row = conn.execute("SELECT current_setting('TimeZone') AS tz").fetchone()
        if row is not None and str(row["tz"] if isinstance(row, dict) else row[0]).upper() not in ("UTC", "ETC/UTC"):
            conn.execute("SET TIME ZONE 'UTC'")
        if self._on_connect is not None:
            self._on_connect(conn)
        conn.commit()

    def _get_pool(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                self._vector_ready = self._has_vector_extension()
                pool = ConnectionPool(
                    conninfo=self._factory,  # called per new connection: IAM tokens expire
                    kwargs={"row_factory": dict_row},
                    min_size=self._min_size,
                    max_size=self._max_size,
                    configure=self._configure,
                    check=ConnectionPool.check_connection,
                    timeout=self._timeout,
                    reconnect_failed=None,
                    open=False,
                    name="memory-engine",
                )
                try:
                    pool.open(wait=True, timeout=self._timeout)
                except BaseException:
                    pool.close()
                    raise
                self._pool = pool
            return self._pool

    def _has_vector_extension(self) -> bool:
        with psycopg.connect(self._factory(), autocommit=True) as conn:
            row = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
            return row is not None

    def reset(self) -> None:
        """Close the pool; the next use reopens it (after migrations created the extension)."""
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    close = reset

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        try:
            pool = self._get_pool()
            with pool.connection() as conn:
                yield conn  # type: ignore[misc]
        except PoolTimeout as exc:
            logger.warning("no database connection within %.0f s: %s", self._timeout, exc)
            raise DatabaseError("the database is unavailable; retry later") from exc
        except psycopg.OperationalError as exc:
            logger.warning("database connection failed: %s: %s", type(exc).__name__, exc)
            raise DatabaseError("the database is unavailable; retry later") from exc
        except psycopg.errors.DataError as exc:
            logger.warning("database rejected a value: %s: %s", type(exc).__name__, exc)
            raise InvalidInput("a value could not be stored (out of range or not representable)") from exc
        except psycopg.Error as exc:
            logger.error("database error: %s: %s", type(exc).__name__, exc)
            raise DatabaseError(f"database error ({type(exc).__name__}); see the server log") from exc

    # One statement in its own transaction: the reads and writes that need nothing else.
    def fetch_one(self, sql: str, params: Params = None) -> Row | None:
        with self.connection() as conn:
            return conn.execute(sql, params).fetchone()

    def fetch_all(self, sql: str, params: Params = None) -> list[Row]:
        with self.connection() as conn:
            return conn.execute(sql, params).fetchall()

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """``sql`` once per row of parameters (nothing for no rows), in one transaction."""
        if rows:
            with self.connection() as conn, conn.cursor() as cur:
                cur.executemany(sql, rows)

    def ping(self) -> bool:
        try:
            with psycopg.connect(self._factory(), connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False
