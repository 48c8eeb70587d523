"""The synthesized CloudFormation template pins what matters: runtimes, timeouts, retries, DLQs,
event patterns, least-privilege permissions, the API's routes, the network, cdk-nag (the ingestion
pipeline in test_synth_ingestion.py, the database in test_synth_database.py).

The modules share ONE synthesis per run (session fixture ``synthesized`` in tests/infra/conftest.py,
written once for every pytest-xdist worker).
"""

from __future__ import annotations

import json

import pytest

from memory_engine import constants as c
from memory_engine.domain.pipeline import STEP_FUNCTION_NAMES
from memory_engine.settings import AWS_REQUIREMENTS
from tests.infra.conftest import Synthesized
from tests.infra.template import (
    actions_of,
    function,
    functions_by_handler,
    granted,
    resources_of,
    role_statements,
)

# --- cdk-nag ---------------------------------------------------------------------------------------

def test_cdk_nag_runs_and_reports_no_unacknowledged_finding(synthesized: Synthesized) -> None:
    reports = {r["pluginName"]: r for r in synthesized.validation_report["pluginReports"]}
    assert "AwsSolutions" in reports, "cdk-nag's AwsSolutions pack must be registered"
    nag = reports["AwsSolutions"]
    assert nag["conclusion"] == "success"
    assert nag["violations"] == []
    assert nag["suppressedViolations"], "the suppressions are visible in the report"


def test_every_acknowledged_finding_says_specifically_why(synthesized: Synthesized) -> None:
    for report in synthesized.validation_report["pluginReports"]:
        for suppressed in report.get("suppressedViolations", []):
            reason = suppressed["reason"]
            assert len(reason) >= 50, (suppressed["acknowledgedId"], reason)
            assert suppressed["acknowledgedAt"] != "MemoryEngine", "acknowledge on the construct, never stack-wide"


def test_the_api_has_no_authorizer_because_the_functions_authenticate(synthesized: Synthesized) -> None:
    nag = next(r for r in synthesized.validation_report["pluginReports"] if r["pluginName"] == "AwsSolutions")
    reasons = {v["acknowledgedId"]: v["reason"] for v in nag["suppressedViolations"]}
    assert "401" in reasons["AwsSolutions::AwsSolutions-APIG4"]
    assert "hashed" in reasons["AwsSolutions::AwsSolutions-APIG4"]


# --- functions ---------------------------------------------------------------------------------------

def test_every_function_is_arm64_python312_traced_in_the_vpc_with_both_layers(synthesized: Synthesized) -> None:
    functions = functions_by_handler(synthesized)
    mcp_layers = [k for k in synthesized.resources("AWS::Lambda::LayerVersion") if "McpDependencies" in k]
    assert len(mcp_layers) == 1
    # api, search, extraction, migrations, expiry sweep + one per pipeline step
    assert len(functions) == 5 + len(STEP_FUNCTION_NAMES)
    for name, (_, props) in functions.items():
        assert props["Runtime"] == "python3.12", name
        assert props["Architectures"] == ["arm64"], name
        assert props["TracingConfig"] == {"Mode": "Active"}, name
        # the dependencies and the core package; the MCP SDK's only where POST /v1/mcp is served
        serves_mcp = name == "memory-engine-api:handler.lambda_handler"
        assert len(props["Layers"]) == (3 if serves_mcp else 2), name
        assert ({"Ref": mcp_layers[0]} in props["Layers"]) is serves_mcp, name
        assert props["VpcConfig"]["SubnetIds"], name
        env = props["Environment"]["Variables"]
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "MemoryEngine"
        assert env[c.ENV_RUNTIME] == "aws"
        assert env[c.ENV_EMBEDDING_DIMENSIONS] == "1024"


@pytest.mark.parametrize(
    ("service", "handler", "timeout"),
    [
        ("api", "handler.lambda_handler", 29),  # HTTP API gives up after 30 s
        ("search", "handler.lambda_handler", 29),
        ("extraction", "handler.lambda_handler", 120),
        ("ingestion-embed-batch", "handler.embed_batch", 300),
        ("ingestion-extract", "handler.extract", 300),
    ],
)
def test_timeouts(synthesized: Synthesized, service: str, handler: str, timeout: int) -> None:
    _, props = function(synthesized, service, handler)
    assert props["Timeout"] == timeout


def test_database_facing_functions_have_reserved_concurrency(synthesized: Synthesized) -> None:
    for service, handler in (("api", "handler.lambda_handler"), ("search", "handler.lambda_handler"),
                             ("ingestion-embed-batch", "handler.embed_batch")):
        assert function(synthesized, service, handler)[1]["ReservedConcurrentExecutions"] >= 1


def test_every_function_gets_the_settings_it_checks_at_cold_start(synthesized: Synthesized) -> None:
    # Given what each function checks at its cold start (settings.AWS_REQUIREMENTS, plus a database)
    seen = set()
    for _, props in functions_by_handler(synthesized).values():
        env = props["Environment"]["Variables"]
        function_name = env["POWERTOOLS_SERVICE_NAME"].removeprefix("memory-engine-").split("-")[0]
        if function_name == "migrations":  # a custom resource: its settings are the resource's properties
            continue
        seen.add(function_name)
        # Then the stack sets every one of them, for the AWS runtime
        assert env[c.ENV_RUNTIME] == "aws", function_name
        assert c.ENV_DATABASE_SECRET_ARN in env, function_name
        missing = [name for name in AWS_REQUIREMENTS[function_name] if name not in env]
        assert not missing, (function_name, missing)
    assert seen == set(AWS_REQUIREMENTS)


# --- extraction: bus -> rule -> queue (DLQ) -> consumer ----------------------------------------------

def test_turn_completed_rule_on_the_custom_bus_targets_the_queue(synthesized: Synthesized) -> None:
    rules = [r["Properties"] for r in synthesized.resources("AWS::Events::Rule").values()]
    turn_rule = next(r for r in rules if r["EventPattern"].get("detail-type") == ["turn.completed"])
    assert turn_rule["EventPattern"] == {"detail-type": [c.DETAIL_TYPE_TURN_COMPLETED]}
    bus_id = next(iter(synthesized.resources("AWS::Events::EventBus")))
    assert turn_rule["EventBusName"] == {"Ref": bus_id}
    target = turn_rule["Targets"][0]
    assert target["Arn"]["Fn::GetAtt"][1] == "Arn"
    assert synthesized.template["Resources"][target["Arn"]["Fn::GetAtt"][0]]["Type"] == "AWS::SQS::Queue"
    assert "DeadLetterConfig" in target


def test_queue_has_dlq_and_visibility_of_six_consumer_timeouts(synthesized: Synthesized) -> None:
    consumer_id, consumer = function(synthesized, "extraction")
    queues = synthesized.resources("AWS::SQS::Queue")
    with_redrive = {k: v["Properties"] for k, v in queues.items() if "RedrivePolicy" in v["Properties"]}
    assert len(with_redrive) == 1
    queue_id, queue = next(iter(with_redrive.items()))
    assert queue["VisibilityTimeout"] >= 6 * consumer["Timeout"]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == 5
    dlq_id = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert queues[dlq_id]["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    # and an alarm watches the DLQ depth
    alarms = [a["Properties"] for a in synthesized.resources("AWS::CloudWatch::Alarm").values()]
    assert any(a["MetricName"] == "ApproximateNumberOfMessagesVisible"
               and a["Dimensions"][0]["Value"] == {"Fn::GetAtt": [dlq_id, "QueueName"]} for a in alarms)
    # the consumer reads the queue with partial batch failures
    (mapping,) = synthesized.resources("AWS::Lambda::EventSourceMapping").values()
    props = mapping["Properties"]
    assert props["FunctionName"] == {"Ref": consumer_id}
    assert props["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_consumer_may_put_events_only_on_its_bus_and_no_other_function_may(synthesized: Synthesized) -> None:
    # the extraction consumer (memory.extraction.completed), the API (memory.forgotten, issue 15) and the
    # ingestion steps that end a run (document.ready / document.failed, issue 14)
    bus_id = next(iter(synthesized.resources("AWS::Events::EventBus")))
    for name, (logical_id, props) in functions_by_handler(synthesized).items():
        resources = granted(synthesized, logical_id, "events:PutEvents")
        if name.startswith(("memory-engine-extraction:", "memory-engine-api:", "memory-engine-ingestion-finalize:",
                            "memory-engine-ingestion-mark-failed:")):
            assert resources == [{"Fn::GetAtt": [bus_id, "Arn"]}]
            assert props["Environment"]["Variables"][c.ENV_EVENT_BUS_NAME] == {"Ref": bus_id}
        else:
            assert resources == [], name


# --- API ---------------------------------------------------------------------------------------------------

def test_routes_follow_the_constants_and_omit_local_only_routes(synthesized: Synthesized) -> None:
    routes = {r["Properties"]["RouteKey"]: r["Properties"] for r in synthesized.resources("AWS::ApiGatewayV2::Route").values()}
    assert set(routes) == {"$default", *c.SEARCH_ROUTES, *c.API_ROUTES, *c.CONSOLE_ROUTES}
    assert not set(routes) & set(c.LOCAL_ONLY_ROUTES)
    integrations = synthesized.resources("AWS::ApiGatewayV2::Integration")
    search_id, _ = function(synthesized, "search")
    api_id, _ = function(synthesized, "api")

    def target(route_key: str) -> str:
        integration_id = routes[route_key]["Target"]["Fn::Join"][1][1]["Ref"]
        uri = integrations[integration_id]["Properties"]["IntegrationUri"]
        return str(uri["Fn::GetAtt"][0])

    assert target(c.SEARCH_ROUTES[0]) == search_id
    assert target("$default") == api_id
    # the web console (GET /console, /console/{proxy+}; /console/ through $default) is served by the API function
    assert c.CONSOLE_ROUTES == ("GET /console", "GET /console/{proxy+}")
    assert all(target(route) == api_id for route in c.CONSOLE_ROUTES)
    # MCP (streamable HTTP, stateless) is served by the API function: a deployed stack is an MCP endpoint
    assert target("POST /v1/mcp") == api_id
    assert all("AuthorizerId" not in r for r in routes.values())
    (stage,) = synthesized.resources("AWS::ApiGatewayV2::Stage").values()
    assert "AccessLogSettings" in stage["Properties"]


# --- network ---------------------------------------------------------------------------------------------

def test_fixed_zones_no_nat_and_endpoints_for_the_aws_apis(synthesized: Synthesized) -> None:
    zones = {s["Properties"]["AvailabilityZone"] for s in synthesized.resources("AWS::EC2::Subnet").values()}
    assert zones == {"us-east-1a", "us-east-1b"}
    assert synthesized.resources("AWS::EC2::NatGateway") == {}
    services = json.dumps([e["Properties"]["ServiceName"] for e in synthesized.resources("AWS::EC2::VPCEndpoint").values()])
    for service in ("secretsmanager", "bedrock-runtime", "events", "states", ".s3"):
        assert service in services, service


def test_only_functions_that_head_possibly_missing_objects_may_list_the_whole_bucket(synthesized: Synthesized) -> None:
    unconditional = set()
    for name, (logical_id, _) in functions_by_handler(synthesized).items():
        for st in role_statements(synthesized, logical_id):
            if "s3:ListBucket" in actions_of(st) and "Condition" not in st:
                unconditional.add(name.split(":")[0])
            elif "s3:ListBucket" in actions_of(st):
                assert st["Condition"] == {"StringLike": {"s3:prefix": [c.S3_WORK_PREFIX + "*"]}}, name
    assert unconditional == {"memory-engine-api", "memory-engine-ingestion-register", "memory-engine-ingestion-extract"}


def test_every_handler_string_names_a_function_of_its_code_asset(synthesized: Synthesized) -> None:
    import ast
    from pathlib import Path

    functions_dir = Path(__file__).resolve().parents[2] / "functions"
    for name, (_, props) in functions_by_handler(synthesized).items():
        service = name.split(":")[0].removeprefix("memory-engine-")
        area = "ingestion" if service.startswith("ingestion-") else service
        tree = ast.parse((functions_dir / area / "handler.py").read_text("utf-8"))
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert props["Handler"].removeprefix("handler.") in defined, name


# --- expiry -----------------------------------------------------------------------------------

def test_expiry_sweep_runs_every_minute_from_eventbridge_scheduler(synthesized: Synthesized) -> None:
    # Given the sweep function
    logical_id, props = function(synthesized, "expiry")
    assert props["Timeout"] == 120 and props["Architectures"] == ["arm64"]
    assert props["ReservedConcurrentExecutions"] == 1  # two sweeps never race
    # Then one Scheduler schedule invokes it every minute, with retries and a dead-letter queue
    schedules = synthesized.resources("AWS::Scheduler::Schedule")
    assert len(schedules) == 1
    schedule = next(iter(schedules.values()))["Properties"]
    assert schedule["ScheduleExpression"] == "rate(1 minute)"
    assert schedule["State"] == "ENABLED"
    target = schedule["Target"]
    assert target["Arn"] == {"Fn::GetAtt": [logical_id, "Arn"]}
    assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 300, "MaximumRetryAttempts": 2}
    assert "DeadLetterConfig" in target
    # and the scheduler's role may invoke exactly that function
    role_ref = target["RoleArn"]["Fn::GetAtt"][0]
    invokes = [r for policy in synthesized.resources("AWS::IAM::Policy").values()
               if {"Ref": role_ref} in policy["Properties"]["Roles"]
               for st in policy["Properties"]["PolicyDocument"]["Statement"] if "lambda:InvokeFunction" in actions_of(st)
               for r in resources_of(st)]
    assert invokes and all(logical_id in json.dumps(r) for r in invokes)
    # and the function reaches the database as the app user, and nothing else of AWS
    assert granted(synthesized, logical_id, "rds-db:connect")
    assert not granted(synthesized, logical_id, "bedrock:InvokeModel")
    assert not granted(synthesized, logical_id, "events:PutEvents")
