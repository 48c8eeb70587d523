"""How every memory-engine function is built: arm64, Python 3.12, the shared layers, in the VPC,
X-Ray tracing, Powertools settings, a log group with retention and its OWN role.

Each function gets a dedicated role that starts with only what running in a VPC needs (its log
group, ENIs, X-Ray); every other permission is granted by the construct that owns the resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from memory_engine import constants as c
from memory_engine_infra.config import REPO_ROOT, DeploymentConfig
from memory_engine_infra.layers import ARCHITECTURE, RUNTIME, SharedLayers
from memory_engine_infra.nag import PYTHON_RUNTIME_REASON, VPC_FUNCTION_REASON, ack
from memory_engine_infra.network import Network
from memory_engine_infra.observability import powertools_environment

FUNCTIONS_DIR = REPO_ROOT / "functions"

#: actions that AWS only authorizes on "*" (ENIs of VPC functions, X-Ray segments)
VPC_ENI_ACTIONS = [
    "ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
]


@dataclass(frozen=True)
class FunctionSpec:
    """One function: ``functions/<area>/handler.py`` attribute ``handler``."""

    area: str
    handler: str
    service: str
    timeout: Duration
    memory_size: int = 1024
    reserved_concurrency: int | None = None
    description: str = ""
    #: gets the MCP layer (only the function that serves ``POST /v1/mcp``)
    serves_mcp: bool = False


class FunctionFactory:
    """Creates functions that share layers, network, common environment and conventions."""

    def __init__(
        self, *, network: Network, layers: SharedLayers, config: DeploymentConfig, environment: Mapping[str, str]
    ) -> None:
        self._network = network
        self._layers = layers
        self._config = config
        self._environment = dict(environment)

    def create(self, scope: Construct, construct_id: str, spec: FunctionSpec, *,
               environment: Mapping[str, str] | None = None,
               security_groups: list[ec2.ISecurityGroup] | None = None) -> lambda_.Function:
        log_group = logs.LogGroup(
            scope, f"{construct_id}Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        role = iam.Role(
            scope, f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"memory-engine {spec.service}: least-privilege execution role",
        )
        role.add_to_policy(iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
        ))
        role.add_to_policy(iam.PolicyStatement(actions=VPC_ENI_ACTIONS, resources=["*"]))
        env = {
            **self._environment,
            **powertools_environment(spec.service),
            **(environment or {}),
        }
        reserved = self._config.reserved(spec.reserved_concurrency) if spec.reserved_concurrency else None
        function = lambda_.Function(
            scope, construct_id,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=lambda_.Code.from_asset(
                str(FUNCTIONS_DIR / spec.area), exclude=["__pycache__", "*.pyc"]
            ),
            handler=f"handler.{spec.handler}",
            layers=self._layers.for_function(serves_mcp=spec.serves_mcp),
            role=role,
            timeout=spec.timeout,
            memory_size=spec.memory_size,
            reserved_concurrent_executions=reserved,
            environment=env,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            vpc=self._network.vpc,
            vpc_subnets=self._network.function_subnets,
            security_groups=security_groups or [self._network.function_security_group],
            description=spec.description or f"memory-engine {spec.service}",
        )
        ack(function, "AwsSolutions-L1", PYTHON_RUNTIME_REASON)
        ack(role, "AwsSolutions-IAM5[Resource::*]", VPC_FUNCTION_REASON)
        return function


def common_environment(config: DeploymentConfig) -> dict[str, str]:
    """Environment every function shares (names from memory_engine.constants)."""
    return {
        c.ENV_RUNTIME: "aws",
        c.ENV_EMBEDDING_PROVIDER: "bedrock",
        c.ENV_EMBEDDING_MODEL: config.embedding_model,
        c.ENV_EMBEDDING_DIMENSIONS: str(config.embedding_dimensions),
        c.ENV_CHAT_PROVIDER: "bedrock",
        c.ENV_CHAT_MODEL: config.chat_model,
        c.ENV_DATABASE_IAM_AUTH: "true",
    }


def bedrock_model_arns(scope: Construct, model_id: str) -> list[str]:
    """ARNs for ``bedrock:InvokeModel`` on exactly one model.

    A cross-region inference profile id (``us.``, ``eu.``, ``apac.``, ``global.`` prefix) needs the
    profile in this account plus the foundation model in whichever region the profile routes to.
    """
    stack = Stack.of(scope)
    prefix, _, base = model_id.partition(".")
    if prefix in {"us", "eu", "apac", "global", "us-gov", "ca", "jp", "au"} and base:
        return [
            stack.format_arn(service="bedrock", resource="inference-profile", resource_name=model_id),
            f"arn:{stack.partition}:bedrock:*::foundation-model/{base}",
        ]
    return [f"arn:{stack.partition}:bedrock:{stack.region}::foundation-model/{model_id}"]


def grant_bedrock(scope: Construct, function: lambda_.Function, *model_ids: str) -> None:
    resources = [arn for model_id in model_ids for arn in bedrock_model_arns(scope, model_id)]
    function.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=resources))
