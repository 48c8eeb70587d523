"""A PostgreSQL server the tests did not start (``MEMORY_ENGINE_TEST_POSTGRES_URL``), with the part of
``EmbeddedPostgres``'s interface the fixtures use."""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict, make_conninfo


class ExternalPostgres:
    """A running server named by a libpq URI of its ``postgres`` database; never started or stopped here."""

    def __init__(self, uri: str) -> None:
        self._uri = uri

    def start(self) -> str:
        return self._uri

    def uri(self, database: str) -> str:
        params = conninfo_to_dict(self._uri)
        params["dbname"] = database
        return make_conninfo(**params)

    def stop(self) -> None:
        return None
