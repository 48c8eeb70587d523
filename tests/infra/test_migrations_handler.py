"""The migrations custom resource handler, on the real embedded PostgreSQL with secrets in moto.

Given a CloudFormation custom resource event (as the CDK Provider framework forwards it) and the
admin/app/search secrets in Secrets Manager, when the handler runs, then the schema is migrated and
the app (read/write) and search (read-only) login roles exist with the right privileges.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import psycopg
import pytest
from moto import mock_aws
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from pydantic import ValidationError

from memory_engine.adapters.postgres.migrations import load_migrations
from memory_engine.errors import SchemaMismatch
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
from memory_engine.local.lambda_runtime import LocalLambdaContext, load_handler

REGION = "us-east-1"
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/MemoryEngine/5b6a7f40-1e5c-11ef-9a4b-0e3f8d6a1c2b"
SERVICE_TOKEN = "arn:aws:lambda:us-east-1:123456789012:function:MemoryEngine-DatabaseMigrationsProviderframework-Ab12Cd34"
APP_USER = "memory_engine_app"
SEARCH_USER = "memory_engine_search"


def cfn_event(request_type: str, properties: dict[str, str], physical_id: str | None = None,
              old: dict[str, str] | None = None) -> dict[str, Any]:
    """A CloudFormation custom resource request, as the Provider framework hands it to onEvent."""
    event: dict[str, Any] = {
        "RequestType": request_type,
        "ServiceToken": SERVICE_TOKEN,
        "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/arn%3Aaws%3A"
                       "cloudformation%3Aus-east-1%3A123456789012%3Astack/MemoryEngine/5b6a7f40?X-Amz-Signature=abc",
        "StackId": STACK_ID,
        "RequestId": str(uuid.uuid4()),
        "LogicalResourceId": "DatabaseSchema5D8B0C2F",
        "ResourceType": "Custom::MemoryEngineSchema",
        "ResourceProperties": {"ServiceToken": SERVICE_TOKEN, **properties},
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    if old is not None:
        event["OldResourceProperties"] = {"ServiceToken": SERVICE_TOKEN, **old}
    return event


def invoke(event: dict[str, Any]) -> dict[str, Any]:
    handler = load_handler("migrations/handler")
    result: dict[str, Any] = handler(event, LocalLambdaContext(function_name="MemoryEngine-MigrationsFunction"))
    return result


@pytest.fixture(scope="module")
def empty_database(pg_server: EmbeddedPostgres) -> str:
    """A brand-new database with no schema at all (what a fresh Aurora cluster looks like)."""
    name = f"cr_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.uri("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return pg_server.uri(name)


@pytest.fixture(scope="module")
def secrets(empty_database: str) -> Iterator[dict[str, str]]:
    """The three secrets in moto, shaped like RDS-attached DatabaseSecrets."""
    params = conninfo_to_dict(empty_database)
    base = {"engine": "postgres", "host": params["host"], "port": int(params.get("port") or 5432),
            "dbname": params["dbname"], "dbClusterIdentifier": "memoryengine-cluster"}
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)

        def put(name: str, username: str, password: str) -> str:
            value = json.dumps({**base, "username": username, "password": password})
            return client.create_secret(Name=name, SecretString=value)["ARN"]

        yield {
            "AdminSecretArn": put("admin", params.get("user") or "postgres", params.get("password") or ""),
            "AppSecretArn": put("app", APP_USER, "app-password-1"),
            "SearchSecretArn": put("search", SEARCH_USER, "search-password-1"),
            "EmbeddingDimensions": "384",
            "CodeHash": "3f1c0a",
        }


def connect_as(url: str, role: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(url, autocommit=True)
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    return conn


def test_create_applies_every_migration_and_creates_both_roles(secrets: dict[str, str], empty_database: str) -> None:
    # Given a fresh database and a Create request
    # When the handler runs
    result = invoke(cfn_event("Create", secrets))
    # Then every migration is applied and reported, under a stable physical id
    assert result["PhysicalResourceId"] == "memory-engine-schema"
    assert result["Data"]["Applied"].split(",") == [m.name for m in load_migrations()]
    with psycopg.connect(empty_database, autocommit=True) as conn:
        roles = {r[0]: r[1] for r in conn.execute(
            "SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = ANY(%s)", ([APP_USER, SEARCH_USER],))}
        dim = conn.execute("SELECT value FROM schema_meta WHERE key = 'embedding_dim'").fetchone()
    assert roles == {APP_USER: True, SEARCH_USER: True}
    assert dim == ("384",)


def test_update_with_a_new_code_hash_is_idempotent(secrets: dict[str, str]) -> None:
    # Given an up-to-date schema
    # When CloudFormation sends an Update (new code hash)
    result = invoke(cfn_event("Update", {**secrets, "CodeHash": "9e8d7c"}, "memory-engine-schema", old=secrets))
    # Then nothing is applied twice and the physical id is unchanged (no replacement, no Delete)
    assert result == {"PhysicalResourceId": "memory-engine-schema", "Data": {"Applied": "", "AppliedCount": 0}}


def test_search_role_reads_but_cannot_write(secrets: dict[str, str], empty_database: str) -> None:
    invoke(cfn_event("Update", secrets, "memory-engine-schema", old=secrets))
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute("INSERT INTO projects (id, name) VALUES ('proj_ro', 'read-only-check') ON CONFLICT DO NOTHING")
        conn.execute(
            "INSERT INTO api_keys (id, project_id, key_prefix, key_hash, scopes) VALUES"
            " ('key_ro', 'proj_ro', 'me_x', 'hash-ro', ARRAY['read']) ON CONFLICT DO NOTHING"
        )
    # Given the search role, when it reads, then it sees the rows
    with connect_as(empty_database, SEARCH_USER) as conn:
        assert conn.execute("SELECT name FROM projects WHERE id = 'proj_ro'").fetchone() == ("read-only-check",)
        # and it may record an API key's use (authentication does that) ...
        conn.execute("UPDATE api_keys SET last_used_at = now() WHERE id = 'key_ro'")
        # ... but it cannot write anything else
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO projects (id, name) VALUES ('proj_x', 'nope')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE api_keys SET revoked_at = now() WHERE id = 'key_ro'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM projects")


def test_app_role_writes_rows_but_cannot_change_the_schema(secrets: dict[str, str], empty_database: str) -> None:
    with connect_as(empty_database, APP_USER) as conn:
        conn.execute("INSERT INTO projects (id, name) VALUES ('proj_rw', 'app-writes')")
        conn.execute("DELETE FROM projects WHERE id = 'proj_rw'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DROP TABLE projects")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE sneaky (id int)")


def test_tables_of_later_migrations_are_readable_by_search_through_default_privileges(
    secrets: dict[str, str], empty_database: str
) -> None:
    # Given a table created later by the migrations (admin) user
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS later_table (id int)")
    # Then search can read it and app can write it without re-running the grants
    with connect_as(empty_database, SEARCH_USER) as conn:
        assert conn.execute("SELECT count(*) FROM later_table").fetchone() == (0,)
    with connect_as(empty_database, APP_USER) as conn:
        conn.execute("INSERT INTO later_table VALUES (1)")


def test_a_dimension_change_fails_the_deploy(secrets: dict[str, str]) -> None:
    # Given a schema built for 384-d vectors, when a deploy asks for 1024
    # Then the handler raises (CloudFormation reports the failure and rolls back)
    with pytest.raises(SchemaMismatch, match="384-dimensional"):
        invoke(cfn_event("Update", {**secrets, "EmbeddingDimensions": "1024"}, "memory-engine-schema", old=secrets))


def test_delete_touches_nothing() -> None:
    # Given a Delete whose secrets do not even exist, then the handler returns without reading them
    props = {"AdminSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone", "AppSecretArn": "x",
             "SearchSecretArn": "y", "EmbeddingDimensions": "1024"}
    assert invoke(cfn_event("Delete", props, "memory-engine-schema")) == {"PhysicalResourceId": "memory-engine-schema"}


def test_a_malformed_event_is_rejected_before_any_work() -> None:
    props = {"AdminSecretArn": "", "AppSecretArn": "x", "SearchSecretArn": "y", "EmbeddingDimensions": "many"}
    with pytest.raises(ValidationError):
        invoke(cfn_event("Create", props))


# --- as on Aurora: the migrations user is NOT a superuser ----------------------------------------------

AURORA_ADMIN = "aurora_like_admin"


@pytest.fixture(scope="module")
def aurora_like_secrets(pg_server: EmbeddedPostgres) -> Iterator[tuple[dict[str, str], str, list[str]]]:
    """A database owned by a CREATEROLE (non-superuser) master user, pgvector already installable —
    the privileges the Aurora master user (rds_superuser) has for what the handler does."""
    name = f"aurora_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.uri("postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (AURORA_ADMIN,)).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE").format(sql.Identifier(AURORA_ADMIN)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(AURORA_ADMIN)))
    url = pg_server.uri(name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")  # on Aurora rds_superuser may; here the superuser does it first
    params = conninfo_to_dict(url)
    base = {"engine": "postgres", "host": params["host"], "port": 5432, "dbname": name}
    suffix = uuid.uuid4().hex[:6]
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)

        def put(secret: str, username: str, password: str) -> str:
            value = json.dumps({**base, "username": username, "password": password})
            return client.create_secret(Name=secret, SecretString=value)["ARN"]

        yield {
            "AdminSecretArn": put("aurora-admin", AURORA_ADMIN, "admin-pw"),
            "AppSecretArn": put("aurora-app", f"app_{suffix}", "app-pw"),
            "SearchSecretArn": put("aurora-search", f"search_{suffix}", "search-pw"),
            "EmbeddingDimensions": "1024",
        }, url, [f"app_{suffix}", f"search_{suffix}"]


def test_a_non_superuser_master_can_create_and_then_update(
    aurora_like_secrets: tuple[dict[str, str], str, list[str]],
) -> None:
    secrets, url, users = aurora_like_secrets
    # Given a first deploy (Create) and a second one (Update: the roles exist, passwords are re-set)
    created = invoke(cfn_event("Create", secrets))
    updated = invoke(cfn_event("Update", {**secrets, "CodeHash": "new"}, created["PhysicalResourceId"], old=secrets))
    # Then both succeed, the tables belong to the master user, and the roles have no special attributes
    assert created["Data"]["AppliedCount"] == len(load_migrations()) and updated["Data"]["AppliedCount"] == 0
    with psycopg.connect(url, autocommit=True) as conn:
        owner = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'memory_entries'").fetchone()
        roles = conn.execute(
            "SELECT rolname, rolcanlogin, rolsuper OR rolcreatedb OR rolcreaterole FROM pg_roles"
            " WHERE rolname = ANY(%s) ORDER BY rolname", (users,),
        ).fetchall()
    assert owner == (AURORA_ADMIN,)
    assert roles == [(users[0], True, False), (users[1], True, False)]
    # and the search role reads what the master user's migrations created
    with connect_as(url, users[1]) as conn:
        assert conn.execute("SELECT count(*) FROM memory_entries").fetchone() == (0,)
