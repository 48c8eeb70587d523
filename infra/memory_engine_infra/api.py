"""HTTP API: ``POST /v1/knowledge/search`` -> search function (read-only database user), ``POST /v1/mcp``
(``constants.API_ROUTES``), the web console's ``GET /console/...`` routes and every other request
(``$default``) -> API function. The route split comes from ``memory_engine.constants``, the same table the
local dev server dispatches with; local-only routes are never deployed.

No API Gateway authorizer, on purpose: API keys are per project, stored hashed in the database, and
checked inside the functions (``memory_engine.http.auth``). An HTTP API Lambda authorizer can only
deny with API Gateway's own bodies (``{"message": "Unauthorized"}`` / 403 ``Forbidden``), never the
SPEC's ``401 {"error": {"code", "message", "details"}}`` for a wrong key, and it would add a second
database lookup per request.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from memory_engine import constants as c
from memory_engine_infra.config import DeploymentConfig
from memory_engine_infra.database import Database
from memory_engine_infra.ingestion import Ingestion
from memory_engine_infra.lambdas import FunctionFactory, FunctionSpec, grant_bedrock
from memory_engine_infra.nag import ack

#: API Gateway HTTP APIs stop waiting for an integration after 30 s.
API_TIMEOUT = Duration.seconds(29)
SEARCH_TIMEOUT = Duration.seconds(29)
#: Each warm function holds at most 2 proxy connections (Database max_size=2 on AWS).
API_RESERVED_CONCURRENCY = 100
SEARCH_RESERVED_CONCURRENCY = 100
AUTH_IN_FUNCTIONS_REASON = (
    "Authentication is done inside the Lambda functions: API keys are per project and stored hashed in the "
    "database, and an HTTP API Lambda authorizer cannot answer a wrong key with the SPEC's "
    "401 {\"error\": {code, message, details}} JSON body (API Gateway returns its own 401/403 bodies)."
)
ACCESS_LOG_FORMAT = (
    '{"requestId":"$context.requestId","ip":"$context.identity.sourceIp","requestTime":"$context.requestTime",'
    '"method":"$context.httpMethod","routeKey":"$context.routeKey","status":"$context.status",'
    '"responseLength":"$context.responseLength","latency":"$context.responseLatency",'
    '"integrationError":"$context.integrationErrorMessage"}'
)


def deployed_search_routes() -> list[tuple[apigwv2.HttpMethod, str]]:
    """``constants.SEARCH_ROUTES`` as (method, path), minus anything local-only."""
    return deployed_routes(c.SEARCH_ROUTES)


def deployed_routes(table: tuple[str, ...]) -> list[tuple[apigwv2.HttpMethod, str]]:
    """``"METHOD /path"`` entries of a route table as (method, path), minus anything local-only."""
    routes = []
    for route in table:
        if route in c.LOCAL_ONLY_ROUTES:
            continue
        method, path = route.split(" ", 1)
        routes.append((apigwv2.HttpMethod(method), path))
    return routes


def deployed_console_routes() -> list[tuple[apigwv2.HttpMethod, str]]:
    """``constants.CONSOLE_ROUTES`` as (method, path): the web console, served by the API function."""
    return [(apigwv2.HttpMethod(method), path) for method, path in (r.split(" ", 1) for r in c.CONSOLE_ROUTES)]


class Api(Construct):
    """The HTTP API and its two functions."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, database: Database,
        ingestion: Ingestion, functions: FunctionFactory,
    ) -> None:
        super().__init__(scope, construct_id)
        self.api_function = functions.create(
            self, "ApiFunction",
            FunctionSpec(
                area=c.FUNCTION_API, handler="lambda_handler", service=c.FUNCTION_API, timeout=API_TIMEOUT,
                memory_size=1536, reserved_concurrency=API_RESERVED_CONCURRENCY, serves_mcp=True,
                description="memory-engine API: memories, entries, documents, embeddings, health",
            ),
        )
        database.connect_as_app(self.api_function)
        ingestion.grant_api(self.api_function)
        # embeddings + write funnel; the chat model merges/supersedes agent writes
        grant_bedrock(self, self.api_function, config.embedding_model, config.chat_model)

        self.search_function = functions.create(
            self, "SearchFunction",
            FunctionSpec(
                area=c.FUNCTION_SEARCH, handler="lambda_handler", service=c.FUNCTION_SEARCH,
                timeout=SEARCH_TIMEOUT, memory_size=1536, reserved_concurrency=SEARCH_RESERVED_CONCURRENCY,
                description="memory-engine search: POST /v1/knowledge/search (read-only database user)",
            ),
        )
        database.connect_as_search(self.search_function)
        # the query embedding; the chat model only for `include: ["synthesis"]` (the one model call on the read path)
        grant_bedrock(self, self.search_function, config.embedding_model, config.chat_model)

        api_integration = integrations.HttpLambdaIntegration("Api", self.api_function)
        search_integration = integrations.HttpLambdaIntegration("Search", self.search_function)
        self.http_api = apigwv2.HttpApi(
            self, "HttpApi",
            description="memory-engine v1",
            default_integration=api_integration,  # the $default route: everything not listed below
            create_default_stage=True,
        )
        ack(self.http_api, "AwsSolutions-APIG4", AUTH_IN_FUNCTIONS_REASON)
        for method, path in deployed_search_routes():
            self.http_api.add_routes(path=path, methods=[method], integration=search_integration)
        # explicit routes of the API function ($default reaches it too; these pin the contract, e.g. POST /v1/mcp)
        for method, path in deployed_routes(c.API_ROUTES) + deployed_console_routes():
            self.http_api.add_routes(path=path, methods=[method], integration=api_integration)

        access_logs = logs.LogGroup(
            self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        stage = self.http_api.default_stage
        assert stage is not None
        cfn_stage = stage.node.default_child
        assert isinstance(cfn_stage, apigwv2.CfnStage)
        cfn_stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=access_logs.log_group_arn, format=ACCESS_LOG_FORMAT
        )
        cfn_stage.default_route_settings = apigwv2.CfnStage.RouteSettingsProperty(
            throttling_burst_limit=200, throttling_rate_limit=100, detailed_metrics_enabled=True
        )

    @property
    def functions(self) -> dict[str, lambda_.Function]:
        return {"Api": self.api_function, "Search": self.search_function}
