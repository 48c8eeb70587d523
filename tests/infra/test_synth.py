"""The synthesized CloudFormation template pins what matters: runtimes, timeouts, retries, DLQs,
event patterns, the pipeline definition, least-privilege permissions, the database shape, cdk-nag.

All tests share ONE synthesis (session fixture ``synthesized`` in tests/infra/conftest.py); keep
every synth-based test in this module so pytest-xdist (--dist loadfile) synthesizes once.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from memory_engine import constants as c
from memory_engine.domain.pipeline import (
    EXPRESS_TIMEOUT_SECONDS,
    SMALL_DOCUMENT_BYTES,
    STEP_FUNCTION_NAMES,
    build_asl,
)
from memory_engine.settings import AWS_REQUIREMENTS
from tests.infra.conftest import CONVERTER_ALLOWED_HOSTS, Synthesized

OUR_FUNCTION_DESCRIPTION = re.compile(r"^memory-engine")


def functions_by_handler(s: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{"<code area>/<handler>": (logical id, properties)}`` for the project's own functions."""
    found = {}
    for logical_id, resource in s.resources("AWS::Lambda::Function").items():
        props = resource["Properties"]
        if not OUR_FUNCTION_DESCRIPTION.match(props.get("Description", "")):
            continue
        service = props["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
        found[f"{service}:{props['Handler']}"] = (logical_id, props)
    return found


def function(s: Synthesized, service: str, handler: str = "handler.lambda_handler") -> tuple[str, dict[str, Any]]:
    return functions_by_handler(s)[f"memory-engine-{service}:{handler}"]


def role_statements(s: Synthesized, function_logical_id: str) -> list[dict[str, Any]]:
    """Every IAM statement attached to the function's execution role."""
    role_ref = s.properties(function_logical_id)["Role"]["Fn::GetAtt"][0]
    statements: list[dict[str, Any]] = []
    for policy in s.resources("AWS::IAM::Policy").values():
        if {"Ref": role_ref} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    role = s.properties(role_ref)
    assert not role.get("ManagedPolicyArns"), "function roles carry no AWS managed policies"
    return statements


def actions_of(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def resources_of(statement: dict[str, Any]) -> list[Any]:
    resources = statement["Resource"]
    return resources if isinstance(resources, list) else [resources]


def granted(s: Synthesized, function_logical_id: str, action: str) -> list[Any]:
    return [r for st in role_statements(s, function_logical_id) if action in actions_of(st) for r in resources_of(st)]


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


# --- ingestion: bucket -> EventBridge -> state machine -----------------------------------------------

def test_bucket_sends_events_to_eventbridge_and_expires_work_files(synthesized: Synthesized) -> None:
    (bucket_id,) = [k for k, v in synthesized.resources("AWS::S3::Bucket").items()
                    if "LifecycleConfiguration" in v["Properties"] and "LoggingConfiguration" in v["Properties"]]
    props = synthesized.properties(bucket_id)
    # the bucket's own property, not CDK's notifications custom resource (one Lambda fewer)
    assert props["NotificationConfiguration"] == {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}
    assert not synthesized.resources("Custom::S3BucketNotifications")
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
    rules = props["LifecycleConfiguration"]["Rules"]
    assert {"Id": "work-files", "Prefix": c.S3_WORK_PREFIX, "ExpirationInDays": 7, "Status": "Enabled"} in rules


def test_bucket_lets_browsers_put_presigned_uploads_and_nothing_else(synthesized: Synthesized) -> None:
    # the web console PUTs files to the presigned URLs of POST /v1/documents/uploads from the API's origin
    (bucket_id,) = [k for k, v in synthesized.resources("AWS::S3::Bucket").items()
                    if "LifecycleConfiguration" in v["Properties"] and "LoggingConfiguration" in v["Properties"]]
    (rule,) = synthesized.properties(bucket_id)["CorsConfiguration"]["CorsRules"]
    assert rule["AllowedMethods"] == ["PUT"]
    assert rule["AllowedHeaders"] == ["content-type"]


def machines(s: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{"STANDARD" | "EXPRESS": (logical id, properties)}``."""
    found = {v["Properties"].get("StateMachineType", "STANDARD"): (k, v["Properties"])
             for k, v in s.resources("AWS::StepFunctions::StateMachine").items()}
    assert len(found) == 2, found.keys()
    return found


def test_object_created_under_projects_starts_a_state_machine_chosen_by_size(synthesized: Synthesized) -> None:
    (bucket_id,) = [k for k, v in synthesized.resources("AWS::S3::Bucket").items()
                    if "LifecycleConfiguration" in v["Properties"] and "LoggingConfiguration" in v["Properties"]]
    by_kind = machines(synthesized)
    rules = [r["Properties"] for r in synthesized.resources("AWS::Events::Rule").values()
             if r["Properties"]["EventPattern"].get("source") == ["aws.s3"]]
    targets = {}
    for rule in rules:
        pattern = rule["EventPattern"]
        size = pattern["detail"]["object"].pop("size")
        assert pattern == {
            "source": ["aws.s3"],
            "detail-type": ["Object Created"],
            "detail": {"bucket": {"name": [{"Ref": bucket_id}]}, "object": {"key": [{"prefix": "projects/"}]}},
        }
        assert "EventBusName" not in rule  # S3 publishes to the default bus
        (target,) = rule["Targets"]
        assert "Input" not in target and "InputTransformer" not in target  # the execution input IS the event
        assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1 and "DeadLetterConfig" in target
        targets[tuple(size[0]["numeric"])] = target["Arn"]
    # every size goes to exactly one machine: small ones to Express, the rest to Standard
    assert targets == {("<=", SMALL_DOCUMENT_BYTES): {"Ref": by_kind["EXPRESS"][0]},
                       (">", SMALL_DOCUMENT_BYTES): {"Ref": by_kind["STANDARD"][0]}}


def test_both_state_machines_run_the_one_pipeline_definition_with_retry_and_catch(synthesized: Synthesized) -> None:
    by_kind = machines(synthesized)
    standard, express = by_kind["STANDARD"][1], by_kind["EXPRESS"][1]
    definition, express_definition = json.loads(standard["DefinitionString"]), json.loads(express["DefinitionString"])
    # both built from the one pipeline definition; Express stops at 5 minutes and, unable to wait for a
    # task token, hands a run awaiting a converter's callback to the Standard machine
    assert definition == build_asl(timeout_seconds=7200)
    assert express_definition == build_asl(timeout_seconds=EXPRESS_TIMEOUT_SECONDS, express=True)
    assert express["DefinitionSubstitutions"] == {
        **standard["DefinitionSubstitutions"], "StandardStateMachineArn": {"Ref": machines(synthesized)["STANDARD"][0]}}
    props = standard
    states = definition["States"]
    for name in ("Register", "Extract", "Chunk", "EmbedBatches", "Finalize", "MarkFailed", "IngestionFailed"):
        assert name in states
    for name in ("Register", "Extract", "Chunk", "Finalize"):
        assert states[name]["Retry"], name
        assert states[name]["Catch"][0]["Next"] == "MarkFailed", name
    embed = states["EmbedBatches"]
    assert embed["Type"] == "Map" and embed["MaxConcurrency"] == 4
    assert embed["Catch"][0]["Next"] == "MarkFailed"
    inner = embed["ItemProcessor"]["States"]["EmbedBatch"]
    assert any("EmbeddingThrottled" in r["ErrorEquals"] for r in inner["Retry"])
    # every ${...FunctionArn} placeholder maps to the Lambda whose handler is that step's attribute
    placeholders = set(re.findall(r"\$\{(\w+FunctionArn)\}", props["DefinitionString"]))
    assert placeholders == set(STEP_FUNCTION_NAMES) == set(props["DefinitionSubstitutions"])
    for placeholder, attribute in STEP_FUNCTION_NAMES.items():
        logical_id = props["DefinitionSubstitutions"][placeholder]["Fn::GetAtt"][0]
        assert synthesized.properties(logical_id)["Handler"] == f"handler.{attribute}"
    assert standard["LoggingConfiguration"]["Level"] == "ALL" and express["LoggingConfiguration"]["Level"] == "ERROR"
    assert standard["TracingConfiguration"] == express["TracingConfiguration"] == {"Enabled": True}


def test_state_machine_roles_invoke_exactly_the_pipeline_functions(synthesized: Synthesized) -> None:
    for _, machine in machines(synthesized).values():
        role_id = machine["RoleArn"]["Fn::GetAtt"][0]
        invoked: set[str] = set()
        for policy in synthesized.resources("AWS::IAM::Policy").values():
            if {"Ref": role_id} not in policy["Properties"]["Roles"]:
                continue
            for st in policy["Properties"]["PolicyDocument"]["Statement"]:
                if "lambda:InvokeFunction" in actions_of(st):
                    for r in resources_of(st):
                        invoked.add(r["Fn::GetAtt"][0] if "Fn::GetAtt" in r else r["Fn::Join"][1][0]["Fn::GetAtt"][0])
        expected = {ref["Fn::GetAtt"][0] for name, ref in machine["DefinitionSubstitutions"].items()
                    if name in STEP_FUNCTION_NAMES}
        assert invoked == expected


def test_only_the_api_function_may_start_executions_of_either_machine(synthesized: Synthesized) -> None:
    ids = sorted(logical_id for logical_id, _ in machines(synthesized).values())
    for name, (logical_id, props) in functions_by_handler(synthesized).items():
        resources = granted(synthesized, logical_id, "states:StartExecution")
        if name.startswith("memory-engine-api:"):
            assert sorted(r["Ref"] for r in resources) == ids
            env = props["Environment"]["Variables"]
            by_kind = machines(synthesized)
            assert env[c.ENV_STATE_MACHINE_ARN] == {"Ref": by_kind["STANDARD"][0]}
            assert env[c.ENV_EXPRESS_STATE_MACHINE_ARN] == {"Ref": by_kind["EXPRESS"][0]}
        else:
            assert resources == [], name


# --- converters: the task-token wait, the callback route, Textract (issue 14) -------------------------

def test_the_standard_machine_waits_for_the_converter_callback_with_a_task_token(synthesized: Synthesized) -> None:
    by_kind = machines(synthesized)
    states = json.loads(by_kind["STANDARD"][1]["DefinitionString"])["States"]
    wait = states["AwaitConversion"]
    assert wait["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken"
    assert wait["Parameters"]["Payload"]["task_token.$"] == "$$.Task.Token"
    assert wait["Parameters"]["FunctionName"] == "${AwaitConversionFunctionArn}"
    assert wait["TimeoutSecondsPath"] == "$.awaiting_conversion.deadline_seconds"
    assert wait["Catch"][0]["Next"] == "MarkFailed" and wait["Next"] == "Chunk"
    logical_id = by_kind["STANDARD"][1]["DefinitionSubstitutions"]["AwaitConversionFunctionArn"]["Fn::GetAtt"][0]
    assert synthesized.properties(logical_id)["Handler"] == "handler.await_conversion"
    # the Express machine (no task tokens there) may start the Standard one, and nothing else may but the API
    express_role = by_kind["EXPRESS"][1]["RoleArn"]["Fn::GetAtt"][0]
    started = [r for policy in synthesized.resources("AWS::IAM::Policy").values()
               if {"Ref": express_role} in policy["Properties"]["Roles"]
               for st in policy["Properties"]["PolicyDocument"]["Statement"] if "states:StartExecution" in actions_of(st)
               for r in resources_of(st)]
    assert started == [{"Ref": by_kind["STANDARD"][0]}]


def test_the_ingestion_resources_have_no_dependency_cycle(synthesized: Synthesized) -> None:
    """CloudFormation refuses a cycle, e.g. a step function whose default policy names the machine that
    invokes it (AwaitConversion resumes runs of that machine: its policy is a separate one)."""
    resources = {k: v for k, v in synthesized.template["Resources"].items() if k.startswith("Ingestion")}

    def references(value: Any) -> set[str]:
        found: set[str] = set()
        if isinstance(value, dict):
            if isinstance(value.get("Ref"), str):
                found.add(value["Ref"])
            if isinstance(value.get("Fn::GetAtt"), list):
                found.add(value["Fn::GetAtt"][0])
            if "Fn::Sub" in value:
                found.update(re.findall(r"\$\{([A-Za-z0-9]+)[.}]", json.dumps(value["Fn::Sub"])))
            for item in value.values():
                found |= references(item)
        elif isinstance(value, list):
            for item in value:
                found |= references(item)
        return found

    graph: dict[str, set[str]] = {}
    for logical_id, resource in resources.items():
        depends = resource.get("DependsOn", [])
        depends = [depends] if isinstance(depends, str) else depends
        graph[logical_id] = (references(resource.get("Properties", {})) | set(depends)) & set(resources)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        if state.get(node) == 2:
            return
        assert state.get(node) != 1, " -> ".join([*path, node])
        state[node] = 1
        for nxt in graph[node]:
            visit(nxt, [*path, node])
        state[node] = 2

    for node in graph:
        visit(node, [])


def test_only_the_callback_route_and_await_conversion_resume_waiting_runs(synthesized: Synthesized) -> None:
    standard = machines(synthesized)["STANDARD"][0]
    for name, (logical_id, _) in functions_by_handler(synthesized).items():
        for action in ("states:SendTaskSuccess", "states:SendTaskFailure"):
            resources = granted(synthesized, logical_id, action)
            if name.startswith(("memory-engine-api:", "memory-engine-ingestion-await-conversion:")):
                assert resources == [{"Ref": standard}], (name, action)
            else:
                assert resources == [], (name, action)


def test_the_callback_route_is_deployed_on_the_api_function_without_an_authorizer(synthesized: Synthesized) -> None:
    routes = {r["Properties"]["RouteKey"]: r["Properties"] for r in synthesized.resources("AWS::ApiGatewayV2::Route").values()}
    callback = routes["POST /v1/converter-callbacks/{token}"]
    assert "AuthorizerId" not in callback  # the signed, expiring URL is the credential
    integration_id = callback["Target"]["Fn::Join"][1][1]["Ref"]
    uri = synthesized.resources("AWS::ApiGatewayV2::Integration")[integration_id]["Properties"]["IntegrationUri"]
    assert uri["Fn::GetAtt"][0] == function(synthesized, "api")[0]
    assert "GET /v1/local-downloads/{proxy+}" not in routes


def test_textract_and_the_callback_secret_are_granted_to_extract_only(synthesized: Synthesized) -> None:
    (secret_id,) = [k for k, v in synthesized.resources("AWS::SecretsManager::Secret").items()
                    if "converter callback" in v["Properties"].get("Description", "")]
    api_id = next(iter(synthesized.resources("AWS::ApiGatewayV2::Api")))
    for name, (logical_id, props) in functions_by_handler(synthesized).items():
        textract = {a for st in role_statements(synthesized, logical_id) for a in actions_of(st) if a.startswith("textract:")}
        secret_readers = granted(synthesized, logical_id, "secretsmanager:GetSecretValue")
        env = props["Environment"]["Variables"]
        if name.startswith("memory-engine-ingestion-extract:"):
            assert textract == {"textract:DetectDocumentText", "textract:StartDocumentTextDetection",
                                "textract:GetDocumentTextDetection"}
            # Textract reads the upload with the caller's credentials: Extract may read projects/
            assert any(r["Fn::Join"][1][-1] == "/projects/*" for r in granted(synthesized, logical_id, "s3:GetObject"))
            assert {"Ref": secret_id} in secret_readers and env[c.ENV_CALLBACK_SECRET_ARN] == {"Ref": secret_id}
            assert api_id in json.dumps(env[c.ENV_PUBLIC_URL])  # callback URLs point at the HTTP API
        elif name.startswith("memory-engine-api:"):
            assert not textract and {"Ref": secret_id} in secret_readers  # verifies callback URLs
        else:
            assert not textract and {"Ref": secret_id} not in secret_readers, name
    services = json.dumps([e["Properties"]["ServiceName"] for e in synthesized.resources("AWS::EC2::VPCEndpoint").values()])
    assert "textract" in services


def test_converter_allowed_hosts_reach_where_converter_urls_are_checked(synthesized: Synthesized) -> None:
    # Given `-c converter_allowed_hosts=...`, Then the API (rule writes) and Extract (converter calls) get it
    # as CONVERTER_ALLOWED_HOSTS, and no other function has it (none calls a converter)
    having = {name.split(":")[0] for name, (_, props) in functions_by_handler(synthesized).items()
              if props["Environment"]["Variables"].get(c.ENV_CONVERTER_ALLOWED_HOSTS) == CONVERTER_ALLOWED_HOSTS}
    assert having == {"memory-engine-api", "memory-engine-ingestion-extract"}
    others = [name for name, (_, props) in functions_by_handler(synthesized).items()
              if name.split(":")[0] not in having and c.ENV_CONVERTER_ALLOWED_HOSTS in props["Environment"]["Variables"]]
    assert others == []


def test_pipeline_steps_touch_only_their_s3_prefixes(synthesized: Synthesized) -> None:
    def prefixes(service: str, handler: str, action: str) -> set[str]:
        found = set()
        for resource in granted(synthesized, function(synthesized, service, handler)[0], action):
            found.add(resource["Fn::Join"][1][-1])  # [<bucket arn>, "/_work/*"]
        return found

    assert prefixes("ingestion-register", "handler.register", "s3:GetObject") == {"/projects/*"}
    assert prefixes("ingestion-register", "handler.register", "s3:PutObject") == set()
    assert prefixes("ingestion-extract", "handler.extract", "s3:PutObject") == {"/_work/*"}
    # Textract reads a multi-page scan staged under _work/ocr/ with Extract's credentials; Extract deletes it
    assert prefixes("ingestion-extract", "handler.extract", "s3:GetObject") == {"/projects/*", "/_work/*"}
    assert prefixes("ingestion-extract", "handler.extract", "s3:DeleteObject") == {"/_work/*"}
    assert prefixes("ingestion-embed-batch", "handler.embed_batch", "s3:GetObject") == {"/_work/*"}
    assert prefixes("search", "handler.lambda_handler", "s3:GetObject") == set()
    for _, (logical_id, _) in functions_by_handler(synthesized).items():
        for st in role_statements(synthesized, logical_id):
            assert not any(a.startswith("s3:") and "*" in a for a in actions_of(st)), st


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
