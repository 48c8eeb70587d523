"""Migrations custom resource (CloudFormation, ``custom_resources.Provider`` onEvent handler).

Create/Update: apply pending SQL migrations as the admin user, then create/update the app
(read/write) and search (read-only) login roles with the passwords of their secrets. CDK passes
a hash of the core package as a property, so every deploy with new code sends an Update.
Delete: nothing (the data outlives the stack; the cluster has its own removal policy).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from aws_lambda_powertools import Logger
from psycopg.conninfo import make_conninfo
from pydantic import BaseModel, ConfigDict, Field

from memory_engine.bootstrap import install_schema

logger = Logger(service="memory-engine-migrations")
PHYSICAL_ID = "memory-engine-schema"


class SchemaProperties(BaseModel):
    """``ResourceProperties`` of ``Custom::MemoryEngineSchema`` (CloudFormation sends strings)."""

    model_config = ConfigDict(extra="ignore")

    admin_secret_arn: str = Field(alias="AdminSecretArn", min_length=1)
    app_secret_arn: str = Field(alias="AppSecretArn", min_length=1)
    search_secret_arn: str = Field(alias="SearchSecretArn", min_length=1)
    embedding_dimensions: int = Field(alias="EmbeddingDimensions", ge=1, le=16000)
    code_hash: str | None = Field(None, alias="CodeHash")


class CustomResourceEvent(BaseModel):
    """The CloudFormation custom resource request as the Provider framework forwards it."""

    model_config = ConfigDict(extra="ignore")

    request_type: Literal["Create", "Update", "Delete"] = Field(alias="RequestType")
    logical_resource_id: str = Field(alias="LogicalResourceId")
    physical_resource_id: str | None = Field(None, alias="PhysicalResourceId")
    resource_properties: SchemaProperties = Field(alias="ResourceProperties")


def _secret(client: Any, arn: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(client.get_secret_value(SecretId=arn)["SecretString"])
    return value


def apply_schema(props: SchemaProperties, secrets_client: Any) -> list[str]:
    """Migrate, then (re)create the login roles. Returns the migrations applied.

    Raises ``SchemaMismatch`` (wrong embedding dimension / unknown migrations) and ``psycopg.Error``.
    """
    admin = _secret(secrets_client, props.admin_secret_arn)
    conninfo = make_conninfo(
        host=admin["host"], port=int(admin.get("port", 5432)), dbname=admin.get("dbname", "memory_engine"),
        user=admin["username"], password=admin["password"], sslmode="require", connect_timeout=10,
    )
    app = _secret(secrets_client, props.app_secret_arn)
    search = _secret(secrets_client, props.search_secret_arn)
    return install_schema(conninfo, embedding_dim=props.embedding_dimensions,
                          app=(app["username"], app["password"]), search=(search["username"], search["password"]))


@logger.inject_lambda_context(log_event=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = CustomResourceEvent.model_validate(event)
    physical_id = request.physical_resource_id or PHYSICAL_ID
    if request.request_type == "Delete":
        logger.info("delete: nothing to do", extra={"physical_resource_id": physical_id})
        return {"PhysicalResourceId": physical_id}
    import boto3

    applied = apply_schema(request.resource_properties, boto3.client("secretsmanager"))
    logger.info("schema up to date", extra={"applied": applied, "code_hash": request.resource_properties.code_hash})
    return {"PhysicalResourceId": physical_id, "Data": {"Applied": ",".join(applied), "AppliedCount": len(applied)}}
