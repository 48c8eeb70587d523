"""Aurora PostgreSQL Serverless v2 (pgvector), RDS Proxy with IAM auth, secrets, migrations.

Three database users, each with its own secret:
- ``memory_engine_admin`` (cluster master): used ONLY by the migrations custom resource.
- ``memory_engine_app``: read/write on the tables (DML only); the API, ingestion and extraction functions.
- ``memory_engine_search``: SELECT only (plus bumping ``api_keys.last_used_at``); the search function.

The functions never see a password: they connect to the proxy with an RDS IAM token, and the secret
they read (``DATABASE_SECRET_ARN``) holds only the proxy host, port, database and user name. The proxy
itself logs in to the cluster with the password secrets of the app and search users, which the
migrations custom resource creates/updates on every deploy.
"""

from __future__ import annotations

import hashlib

from aws_cdk import CustomResource, Duration, RemovalPolicy, SecretValue
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import custom_resources as cr
from constructs import Construct

from memory_engine import constants as c
from memory_engine_infra.config import DeploymentConfig
from memory_engine_infra.lambdas import FunctionFactory, FunctionSpec
from memory_engine_infra.layers import CORE_PACKAGE
from memory_engine_infra.nag import BASIC_EXECUTION_POLICY, ack, arn_of
from memory_engine_infra.network import Network

DATABASE_NAME = "memory_engine"
ADMIN_USER = "memory_engine_admin"
APP_USER = "memory_engine_app"
SEARCH_USER = "memory_engine_search"
PORT = 5432
ENGINE_VERSION = rds.AuroraPostgresEngineVersion.VER_16_8  # ships pgvector 0.8.0 (iterative index scans)


def schema_code_hash() -> str:
    """Hash of the core package's migrations and Python code: a change re-runs the migrations."""
    digest = hashlib.sha256()
    for path in sorted(CORE_PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in {".sql", ".py"} and "__pycache__" not in path.parts:
            digest.update(path.relative_to(CORE_PACKAGE).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


class Database(Construct):
    """The cluster, its proxy, the per-user secrets and the schema (migrations) custom resource."""

    def __init__(
        self, scope: Construct, construct_id: str, *, network: Network, config: DeploymentConfig,
        functions: FunctionFactory,
    ) -> None:
        super().__init__(scope, construct_id)
        vpc = network.vpc
        self.admin_secret = rds.DatabaseSecret(self, "AdminSecret", username=ADMIN_USER, dbname=DATABASE_NAME)
        self.cluster = rds.DatabaseCluster(
            self, "Cluster",
            engine=rds.DatabaseClusterEngine.aurora_postgres(version=ENGINE_VERSION),
            credentials=rds.Credentials.from_secret(self.admin_secret),
            default_database_name=DATABASE_NAME,
            writer=rds.ClusterInstance.serverless_v2(
                "Writer", publicly_accessible=False, enable_performance_insights=True
            ),
            readers=[
                rds.ClusterInstance.serverless_v2(
                    f"Reader{i + 1}", scale_with_writer=True, publicly_accessible=False,
                    enable_performance_insights=True,
                )
                for i in range(config.db_readers)
            ],
            serverless_v2_min_capacity=config.db_min_acu,
            serverless_v2_max_capacity=config.db_max_acu,
            vpc=vpc,
            vpc_subnets=network.database_subnets,
            port=PORT,
            iam_authentication=True,
            storage_encrypted=True,
            deletion_protection=True,
            removal_policy=RemovalPolicy.SNAPSHOT,
            backup=rds.BackupProps(retention=Duration.days(7)),
            cloudwatch_logs_exports=["postgresql"],
        )
        self.app_password_secret = self._user_secret("AppSecret", APP_USER)
        self.search_password_secret = self._user_secret("SearchSecret", SEARCH_USER)

        self.proxy_security_group = ec2.SecurityGroup(
            self, "ProxySecurityGroup", vpc=vpc, allow_all_outbound=True, description="RDS Proxy of memory-engine"
        )
        self.proxy = rds.DatabaseProxy(
            self, "Proxy",
            proxy_target=rds.ProxyTarget.from_cluster(self.cluster),
            secrets=[self.app_password_secret, self.search_password_secret],
            vpc=vpc,
            vpc_subnets=network.database_subnets,
            security_groups=[self.proxy_security_group],
            iam_auth=True,
            require_tls=True,
            debug_logging=False,
        )
        self.cluster.connections.allow_default_port_from(self.proxy_security_group, "RDS Proxy")

        # What the functions read: where to connect and as whom. No password (IAM tokens only).
        self.app_connection_secret = self._connection_secret("AppConnection", APP_USER)
        self.search_connection_secret = self._connection_secret("SearchConnection", SEARCH_USER)
        for secret in (self.app_connection_secret, self.search_connection_secret):
            ack(secret, "AwsSolutions-SMG4",
                "Holds no credential (proxy host, port, database, user name): functions authenticate with short-lived "
                "RDS IAM tokens, so there is nothing to rotate. The password secrets the proxy uses are rotated.")

        self._schema(network, config, functions)
        self._rotation(network)

    def _user_secret(self, construct_id: str, username: str) -> secretsmanager.ISecret:
        secret = rds.DatabaseSecret(
            self, construct_id, username=username, dbname=DATABASE_NAME, master_secret=self.admin_secret
        )
        return secret.attach(self.cluster)

    def _connection_secret(self, construct_id: str, username: str) -> secretsmanager.Secret:
        return secretsmanager.Secret(
            self, construct_id,
            description=f"memory-engine: RDS Proxy endpoint and user {username} (IAM auth, no password)",
            secret_object_value={
                "proxy_host": SecretValue.unsafe_plain_text(self.proxy.endpoint),
                "host": SecretValue.unsafe_plain_text(self.proxy.endpoint),
                "port": SecretValue.unsafe_plain_text(str(PORT)),
                "dbname": SecretValue.unsafe_plain_text(DATABASE_NAME),
                "username": SecretValue.unsafe_plain_text(username),
            },
        )

    def _schema(self, network: Network, config: DeploymentConfig, functions: FunctionFactory) -> None:
        self.migrations_security_group = ec2.SecurityGroup(
            self, "MigrationsSecurityGroup", vpc=network.vpc, allow_all_outbound=True,
            description="memory-engine migrations custom resource",
        )
        self.migrations_function = functions.create(
            self, "MigrationsFunction",
            FunctionSpec(
                area="migrations", handler="lambda_handler", service="migrations",
                timeout=Duration.minutes(10), memory_size=512,
                description="memory-engine: applies SQL migrations and database roles (custom resource)",
            ),
            security_groups=[self.migrations_security_group],
        )
        self.cluster.connections.allow_default_port_from(self.migrations_security_group, "migrations")
        for secret in (self.admin_secret, self.app_password_secret, self.search_password_secret):
            secret.grant_read(self.migrations_function)

        provider_logs = logs.LogGroup(
            self, "MigrationsProviderLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.migrations_provider = cr.Provider(
            self, "MigrationsProvider", on_event_handler=self.migrations_function, log_group=provider_logs
        )
        # the Provider's own (CDK-managed) framework function lives under it; ours is a sibling
        ack(self.migrations_provider, "AwsSolutions-L1",
            "The custom resource Provider framework's own function; its runtime is set by CDK.")
        ack(self.migrations_provider, f"AwsSolutions-IAM4[{BASIC_EXECUTION_POLICY}]",
            "The Provider framework function (CDK-managed) only writes its own logs.")
        ack(self.migrations_provider, f"AwsSolutions-IAM5[Resource::{arn_of(self.migrations_function)}:*]",
            "The Provider framework may invoke the migrations function and its versions only.")
        self.schema = CustomResource(
            self, "Schema",
            service_token=self.migrations_provider.service_token,
            resource_type="Custom::MemoryEngineSchema",
            properties={
                "AdminSecretArn": self.admin_secret.secret_arn,
                "AppSecretArn": self.app_password_secret.secret_arn,
                "SearchSecretArn": self.search_password_secret.secret_arn,
                "EmbeddingDimensions": str(config.embedding_dimensions),
                # A new hash on every code change: CloudFormation sends Update, pending migrations apply.
                "CodeHash": schema_code_hash(),
            },
        )
        self.schema.node.add_dependency(self.cluster)

    def _rotation(self, network: Network) -> None:
        # Rotation may only start once the migrations created the users it logs in as.
        rotations = [
            self.cluster.add_rotation_single_user(vpc_subnets=network.function_subnets),
            *(
                secretsmanager.SecretRotation(
                    self, f"{name}Rotation",
                    application=secretsmanager.SecretRotationApplication.POSTGRES_ROTATION_SINGLE_USER,
                    secret=secret, target=self.cluster, vpc=network.vpc, vpc_subnets=network.function_subnets,
                )
                for name, secret in (("App", self.app_password_secret), ("Search", self.search_password_secret))
            ),
        ]
        for rotation in rotations:
            rotation.node.add_dependency(self.schema)

    # --- grants used by the other constructs ---
    def connect_as_app(self, function: lambda_.Function) -> None:
        """Read/write database access through the proxy (IAM auth as ``memory_engine_app``)."""
        self._connect(function, self.app_connection_secret, APP_USER)

    def connect_as_search(self, function: lambda_.Function) -> None:
        """Read-only database access through the proxy (IAM auth as ``memory_engine_search``)."""
        self._connect(function, self.search_connection_secret, SEARCH_USER)

    def _connect(self, function: lambda_.Function, secret: secretsmanager.Secret, user: str) -> None:
        secret.grant_read(function)
        self.proxy.grant_connect(function, user)
        for group in function.connections.security_groups:
            self.proxy_security_group.add_ingress_rule(
                group, ec2.Port.tcp(PORT), "memory-engine functions", remote_rule=False
            )
        function.add_environment(c.ENV_DATABASE_SECRET_ARN, secret.secret_arn)
