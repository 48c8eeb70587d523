"""The database's connection info on AWS follows a rotated secret without a cold start."""

from __future__ import annotations

import json

import boto3
from moto import mock_aws
from psycopg.conninfo import conninfo_to_dict

from memory_engine.adapters.postgres.aws_conninfo import SECRET_MAX_AGE_SECONDS, AwsConninfo


def _secret(password: str) -> str:
    return json.dumps({"host": "db.internal", "proxy_host": "proxy.internal", "port": 5432,
                       "username": "memory_engine_app", "password": password, "dbname": "memory_engine"})


@mock_aws
def test_a_rotated_password_reaches_new_connections_once_the_cached_read_is_old() -> None:
    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    arn = secrets.create_secret(Name="me-db", SecretString=_secret("first"))["ARN"]
    rds = boto3.client("rds", region_name="us-east-1")
    cached = AwsConninfo(secrets, rds, arn, iam_auth=False)
    fresh = AwsConninfo(secrets, rds, arn, iam_auth=False, max_age=0)
    first = conninfo_to_dict(cached())
    assert first["host"] == "proxy.internal" and first["password"] == "first" and first["sslmode"] == "require"
    # When the secret is rotated
    secrets.put_secret_value(SecretId=arn, SecretString=_secret("second"))
    # Then within the cache's age the read is reused, and after it the new password is used
    assert conninfo_to_dict(cached())["password"] == "first"
    assert conninfo_to_dict(fresh())["password"] == "second"
    assert 0 < SECRET_MAX_AGE_SECONDS <= 900


@mock_aws
def test_with_iam_auth_the_password_is_a_fresh_token_for_the_proxy() -> None:
    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    arn = secrets.create_secret(Name="me-db", SecretString=_secret("unused"))["ARN"]
    info = conninfo_to_dict(AwsConninfo(secrets, boto3.client("rds", region_name="us-east-1"), arn, iam_auth=True)())
    assert info["password"] != "unused" and "proxy.internal" in info["password"]
