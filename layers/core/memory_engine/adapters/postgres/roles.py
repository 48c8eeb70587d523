"""Database login roles of an AWS deployment: one read/write role for the app functions, one
read-only role for search. Created and re-granted by the migrations custom resource on every deploy.

The roles get privileges on the tables (never ownership or DDL): migrations stay the only writer
of the schema. Default privileges cover tables that later migrations create.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import psycopg
from psycopg import sql


class RoleAccess(str, Enum):
    READ_WRITE = "read_write"
    READ_ONLY = "read_only"


#: Columns the read-only role may still update: authenticating a request records the key's use.
READ_ONLY_UPDATABLE_COLUMNS: dict[str, tuple[str, ...]] = {"api_keys": ("last_used_at",)}


@dataclass(frozen=True)
class LoginRole:
    name: str
    password: str
    access: RoleAccess


def ensure_roles(conninfo: str, roles: list[LoginRole], *, schema: str = "public") -> None:
    """Create each role if missing, set its password, (re)grant its privileges on ``schema``.

    Run as the owner of the schema's tables (the migrations user). Idempotent. Raises
    ``psycopg.Error`` when the connection or a statement fails.
    """
    with psycopg.connect(conninfo, autocommit=True) as conn:
        database = conn.info.dbname
        for role in roles:
            name = sql.Identifier(role.name)
            with conn.transaction():
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role.name,)).fetchone()
                # No attribute clauses beyond LOGIN/PASSWORD: on Aurora the migrations user is not a
                # superuser, and naming (NO)SUPERUSER/(NO)CREATEDB in ALTER ROLE needs those attributes.
                # The defaults of CREATE ROLE are already NOSUPERUSER NOCREATEDB NOCREATEROLE.
                verb = "ALTER" if exists else "CREATE"
                conn.execute(
                    sql.SQL(verb + " ROLE {} WITH LOGIN PASSWORD {}").format(name, sql.Literal(role.password))
                )
                for statement in _grants(role.access, schema):
                    conn.execute(sql.SQL(statement).format(role=name, db=sql.Identifier(database),
                                                           schema=sql.Identifier(schema)))


def _grants(access: RoleAccess, schema: str) -> list[str]:
    common = [
        "GRANT CONNECT ON DATABASE {db} TO {role}",
        "GRANT USAGE ON SCHEMA {schema} TO {role}",
    ]
    if access is RoleAccess.READ_WRITE:
        return [
            *common,
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}",
            "GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}",
            "ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}",
            "ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {role}",
        ]
    column_grants = [
        f"GRANT UPDATE ({', '.join(columns)}) ON {{schema}}.{table} TO {{role}}"
        for table, columns in READ_ONLY_UPDATABLE_COLUMNS.items()
    ]
    return [
        *common,
        "REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA {schema} FROM {role}",
        "GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
        "GRANT SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {role}",
        "ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT ON TABLES TO {role}",
        *column_grants,
    ]
