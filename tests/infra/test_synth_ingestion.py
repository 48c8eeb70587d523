"""The synthesized ingestion pipeline: bucket -> EventBridge -> the state machine chosen by size, the
one pipeline definition, the converter's task-token wait and callback route, each step's permissions."""

from __future__ import annotations

import json
import re
from typing import Any

from memory_engine import constants as c
from memory_engine.domain.pipeline import (
    EXPRESS_TIMEOUT_SECONDS,
    SMALL_DOCUMENT_BYTES,
    STEP_FUNCTION_NAMES,
    build_asl,
)
from tests.infra.conftest import CONVERTER_ALLOWED_HOSTS, Synthesized
from tests.infra.template import (
    actions_of,
    function,
    functions_by_handler,
    granted,
    machines,
    resources_of,
    role_statements,
)

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


