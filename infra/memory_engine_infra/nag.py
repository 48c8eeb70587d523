"""cdk-nag (v3, a CDK policy-validation plugin) acknowledgements.

Each one names the exact finding (rule id plus, for granular rules, the finding in brackets), is
attached to the narrowest construct it concerns, and says why the finding is acceptable here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

from memory_engine_infra.api import AUTH_IN_FUNCTIONS_REASON

if TYPE_CHECKING:
    from memory_engine_infra.stack import MemoryEngineStack

PYTHON_RUNTIME_REASON = (
    "Python 3.12 is the project's pinned Lambda runtime: the dependency layer is built for cp312 "
    "(manylinux2014_aarch64 wheels) and CI tests that version; moving runtimes is a deliberate upgrade."
)
BASIC_EXECUTION_POLICY = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
VPC_FUNCTION_REASON = (
    "Only actions that AWS authorizes on '*' use it: the ec2 network-interface actions a VPC function "
    "needs and xray:PutTraceSegments/PutTelemetryRecords for active tracing."
)


def ack(construct: IConstruct, finding: str, reason: str) -> None:
    Validations.of(construct).acknowledge(Acknowledgment(id=f"AwsSolutions::{finding}", reason=reason))


def logical_id(construct: IConstruct) -> str:
    child = construct.node.default_child
    assert isinstance(child, CfnResource), construct.node.path
    return Stack.of(construct).get_logical_id(child)


def suppress_findings(stack: MemoryEngineStack) -> None:
    functions: list[lambda_.Function] = [*stack.functions.values(), stack.database.migrations_function]
    for function in functions:
        ack(function, "AwsSolutions-L1", PYTHON_RUNTIME_REASON)
        assert function.role is not None
        ack(function.role, "AwsSolutions-IAM5[Resource::*]", VPC_FUNCTION_REASON)

    bucket = logical_id(stack.ingestion.bucket)
    for handler, function in stack.ingestion.functions.items():
        assert function.role is not None
        for prefix in ("_work", "projects"):
            ack(function.role, f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/{prefix}/*]",
                f"The {handler} step reads/writes objects under {prefix}/ only; object keys are per project "
                "and document, so the grant is a key prefix, never the whole bucket.")
        for machine in (stack.ingestion.state_machine, stack.ingestion.express_state_machine):
            ack(machine.role, f"AwsSolutions-IAM5[Resource::<{logical_id(function)}.Arn>:*]",
                "lambda:InvokeFunction on the pipeline's own task function and its versions/aliases (CDK grantInvoke).")
    for machine in (stack.ingestion.state_machine, stack.ingestion.express_state_machine):
        ack(machine.role, "AwsSolutions-IAM5[Resource::*]",
            "Step Functions logging (logs:CreateLogDelivery, ...DescribeLogGroups) and X-Ray tracing actions "
            "(xray:PutTraceSegments, ...) are only authorized on '*'.")
    ack(stack.ingestion.express_state_machine, "AwsSolutions-SF1",
        "The Express machine for small documents logs ERROR events only: each document's outcome (status, "
        "error) is recorded in the database by the pipeline itself, and logging ALL events would cost about as "
        "much CloudWatch ingestion as the Express executions do (docs/ingestion.md). The Standard machine logs ALL.")
    api_role = stack.api.api_function.role
    assert api_role is not None
    ack(api_role, f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/projects/*]",
        "The API presigns uploads, writes text documents and deletes documents under projects/<project_id>/; "
        "the project id is only known per request, so the grant is the projects/ prefix.")
    ack(api_role, f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/_work/*]",
        "Deleting a document also deletes its intermediate pipeline objects under _work/<document_id>/ "
        "(s3:DeleteObject only).")

    ack(stack.api.http_api, "AwsSolutions-APIG4", AUTH_IN_FUNCTIONS_REASON)
    ack(stack.ingestion.rule_dead_letters, "AwsSolutions-SQS3",
        "This queue IS a dead-letter queue: the EventBridge rule's target DLQ for S3 events it could not deliver "
        "to the state machine (alarmed in Observability).")
    ack(stack.expiry.dead_letter_queue, "AwsSolutions-SQS3",
        "This queue IS a dead-letter queue: EventBridge Scheduler's DLQ for expiry-sweep invocations it could not "
        "deliver (alarmed in Observability).")
    ack(stack.expiry.scheduler_role, f"AwsSolutions-IAM5[Resource::<{logical_id(stack.expiry.sweeper)}.Arn>:*]",
        "EventBridge Scheduler may invoke the expiry sweep function and its versions only (CDK grantInvoke).")
    for secret in (stack.database.app_connection_secret, stack.database.search_connection_secret):
        ack(secret, "AwsSolutions-SMG4",
            "Holds no credential (proxy host, port, database, user name): functions authenticate with short-lived "
            "RDS IAM tokens, so there is nothing to rotate. The password secrets the proxy uses are rotated.")
    Validations.of(stack.network.vpc).acknowledge(Acknowledgment(
        id="CloudFormation-Validate::W3010",
        reason="Zones are fixed on purpose (DeploymentConfig.availability_zones, -c availability_zones=...) so "
               "synth never queries the account and the template is deterministic.",
    ))

    provider = stack.database.migrations_provider.node.find_child("framework-onEvent")
    ack(provider, "AwsSolutions-L1", "The custom resource Provider framework's own function; its runtime is set by CDK.")
    ack(provider, f"AwsSolutions-IAM4[{BASIC_EXECUTION_POLICY}]",
        "The Provider framework function (CDK-managed) only writes its own logs.")
    ack(provider, f"AwsSolutions-IAM5[Resource::<{logical_id(stack.database.migrations_function)}.Arn>:*]",
        "The Provider framework may invoke the migrations function and its versions only.")

    notifications = stack.node.try_find_child("BucketNotificationsHandler050a0587b7544547bf325f094a3db834")
    if notifications is not None:
        ack(notifications, f"AwsSolutions-IAM4[{BASIC_EXECUTION_POLICY}]",
            "CDK's bucket-notifications handler (enables EventBridge delivery on the documents bucket) only logs.")
        ack(notifications, "AwsSolutions-IAM5[Resource::*]",
            "CDK's bucket-notifications handler: s3:PutBucketNotification is granted on '*' by CDK, used once at deploy.")
