"""The synthesized database and what may reach it: Aurora Serverless v2, RDS Proxy, the read-only
search user, the migrations function, Bedrock grants."""

from __future__ import annotations

import json
from typing import Any

from memory_engine import constants as c
from tests.infra.conftest import Synthesized
from tests.infra.template import (
    actions_of,
    function,
    functions_by_handler,
    granted,
    resources_of,
    role_statements,
)

# --- permissions: Bedrock, database ------------------------------------------------------------------

def test_bedrock_is_granted_on_the_configured_models_only(synthesized: Synthesized) -> None:
    for name, (logical_id, _) in functions_by_handler(synthesized).items():
        for st in role_statements(synthesized, logical_id):
            if any(a.startswith("bedrock:") for a in actions_of(st)):
                assert actions_of(st) == ["bedrock:InvokeModel"], name
                assert "*" not in resources_of(st), name
    search_models = json.dumps(granted(synthesized, function(synthesized, "search")[0], "bedrock:InvokeModel"))
    # the chat model too, for `include: ["synthesis"]`
    assert "amazon.titan-embed-text-v2:0" in search_models and "anthropic.claude" in search_models
    consumer_models = json.dumps(granted(synthesized, function(synthesized, "extraction")[0], "bedrock:InvokeModel"))
    assert "amazon.titan-embed-text-v2:0" in consumer_models and "anthropic.claude" in consumer_models
    assert granted(synthesized, function(synthesized, "ingestion-chunk", "handler.chunk")[0], "bedrock:InvokeModel") == []


def _connection_secret_user(s: Synthesized, function_props: dict[str, Any]) -> str:
    secret_id = function_props["Environment"]["Variables"][c.ENV_DATABASE_SECRET_ARN]["Ref"]
    secret_string = s.properties(secret_id)["SecretString"]
    return json.dumps(secret_string)


def test_search_connects_as_the_read_only_user_and_api_as_the_app_user(synthesized: Synthesized) -> None:
    search_id, search = function(synthesized, "search")
    api_id, api = function(synthesized, "api")
    assert '\\"username\\":\\"memory_engine_search\\"' in _connection_secret_user(synthesized, search)
    assert '\\"username\\":\\"memory_engine_app\\"' in _connection_secret_user(synthesized, api)
    assert "password" not in _connection_secret_user(synthesized, search)  # IAM tokens, never a password
    assert search["Environment"]["Variables"][c.ENV_DATABASE_IAM_AUTH] == "true"
    search_connect = json.dumps(granted(synthesized, search_id, "rds-db:connect"))
    assert search_connect.endswith('/memory_engine_search"]]}]') and "memory_engine_app" not in search_connect
    assert "memory_engine_search" not in json.dumps(granted(synthesized, api_id, "rds-db:connect"))
    assert granted(synthesized, search_id, "secretsmanager:GetSecretValue") == [
        search["Environment"]["Variables"][c.ENV_DATABASE_SECRET_ARN]]


def test_only_the_migrations_function_can_read_the_admin_password(synthesized: Synthesized) -> None:
    (schema,) = synthesized.resources("Custom::MemoryEngineSchema").values()
    admin_secret = schema["Properties"]["AdminSecretArn"]
    readers = [name for name, (logical_id, _) in functions_by_handler(synthesized).items()
               if admin_secret in granted(synthesized, logical_id, "secretsmanager:GetSecretValue")]
    assert readers == ["memory-engine-migrations:handler.lambda_handler"]


# --- database ------------------------------------------------------------------------------------------

def test_aurora_serverless_v2_postgres16_with_iam_auth(synthesized: Synthesized) -> None:
    (cluster,) = synthesized.resources("AWS::RDS::DBCluster").values()
    props = cluster["Properties"]
    assert props["Engine"] == "aurora-postgresql"
    assert props["EngineVersion"].startswith("16.")
    assert props["EnableIAMDatabaseAuthentication"] is True
    assert props["StorageEncrypted"] is True
    assert props["ServerlessV2ScalingConfiguration"]["MinCapacity"] >= 0.5
    assert props["DeletionProtection"] is True
    instances = [i["Properties"] for i in synthesized.resources("AWS::RDS::DBInstance").values()]
    assert instances and all(i["DBInstanceClass"] == "db.serverless" for i in instances)
    assert all(i["PubliclyAccessible"] is False for i in instances)


def test_rds_proxy_requires_iam_auth_and_tls(synthesized: Synthesized) -> None:
    (proxy,) = synthesized.resources("AWS::RDS::DBProxy").values()
    props = proxy["Properties"]
    assert props["RequireTLS"] is True
    assert props["EngineFamily"] == "POSTGRESQL"
    assert {a["IAMAuth"] for a in props["Auth"]} == {"REQUIRED"}
    assert len(props["Auth"]) == 2  # the app and the search users


def test_migrations_run_on_every_code_change(synthesized: Synthesized) -> None:
    from memory_engine_infra.database import schema_code_hash

    (schema,) = synthesized.resources("Custom::MemoryEngineSchema").values()
    props = schema["Properties"]
    assert props["CodeHash"] == schema_code_hash()
    assert props["EmbeddingDimensions"] == "1024"
    assert "DependsOn" in schema


