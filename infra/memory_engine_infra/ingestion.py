"""Document ingestion: the bucket, the S3 -> EventBridge -> Step Functions rule, the task functions.

The state machine definition is NOT written here: it is the one pipeline definition of the code
(``memory_engine.domain.pipeline.build_asl``), with the Lambda ARNs substituted for its
``${XxxFunctionArn}`` placeholders. One Lambda per pipeline step, each with only the S3 prefixes it uses.

Converters (ingestion rules): Extract signs callback URLs with the ``ConverterCallbackSecret`` and
may call Amazon Textract (the ``ocr`` converter; Textract reads the object from the bucket with the
caller's credentials, i.e. Extract's ``s3:GetObject`` on ``projects/``). AwaitConversion is a
``.waitForTaskToken`` state of the Standard machine; the API function's callback route (and
AwaitConversion itself, when the callback came first) resume it with ``SendTaskSuccess``. The
Express machine hands such a run to the Standard one (``states:StartExecution``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from memory_engine import constants as c
from memory_engine.domain.pipeline import EXPRESS_TIMEOUT_SECONDS, SMALL_DOCUMENT_BYTES, STANDARD_MACHINE_PLACEHOLDER
from memory_engine_infra.config import DeploymentConfig
from memory_engine_infra.database import Database
from memory_engine_infra.lambdas import FunctionFactory, FunctionSpec, grant_bedrock
from memory_engine_infra.nag import ack, arn_of

PROJECTS = f"{c.S3_PROJECT_PREFIX}*"
WORK = f"{c.S3_WORK_PREFIX}*"


@dataclass(frozen=True)
class StepAccess:
    """Sizing and S3 access of one pipeline step (``handler`` attribute of functions/ingestion)."""

    timeout: Duration
    memory_size: int = 1024
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    #: key prefixes the step lists (ListObjectsV2 before deleting a document's work objects)
    list_prefixes: tuple[str, ...] = ()
    #: HEAD of a possibly missing object: S3 answers 404 (not 403) only with s3:ListBucket on the bucket
    heads_objects: bool = False
    embeds: bool = False
    #: calls Amazon Textract (the `ocr` converter) and signs converter callback URLs
    converts: bool = False
    #: publishes document.ready / document.failed on the engine's bus
    publishes: bool = False
    #: resumes a waiting run (SendTaskSuccess/Failure) when the converter's callback came first
    resumes: bool = False


#: Textract's text detection: synchronous for images and one-page documents, asynchronous (start, then
#: get) for multi-page PDFs read from S3. Textract has no resource-level permissions for these actions.
TEXTRACT_ACTIONS = ("textract:DetectDocumentText", "textract:StartDocumentTextDetection",
                    "textract:GetDocumentTextDetection")

STEP_ACCESS: dict[str, StepAccess] = {
    "register": StepAccess(Duration.seconds(60), 512, read=(PROJECTS,), heads_objects=True),
    # reads _work/ and deletes there too: Textract reads the multi-page scan Extract stages under
    # _work/ocr/ with Extract's own credentials, and Extract removes the copy when the job is done
    "extract": StepAccess(Duration.minutes(5), 2048, read=(PROJECTS, WORK), write=(WORK,), delete=(WORK,),
                          heads_objects=True, converts=True),
    "await_conversion": StepAccess(Duration.seconds(60), 512, resumes=True),
    "chunk": StepAccess(Duration.minutes(3), 1024, read=(WORK,), write=(WORK,)),
    "embed_batch": StepAccess(Duration.minutes(5), 1024, read=(WORK,), embeds=True),
    "finalize": StepAccess(Duration.seconds(120), 512, read=(WORK,), delete=(WORK,), list_prefixes=(WORK,),
                           publishes=True),
    "mark_failed": StepAccess(Duration.seconds(60), 512, delete=(WORK,), list_prefixes=(WORK,), publishes=True),
}
DEFAULT_STEP_ACCESS = StepAccess(Duration.minutes(5), 1024, read=(PROJECTS, WORK), write=(WORK,))
#: The Map over embed batches bounds Bedrock + database load; this caps the embed function itself.
EMBED_RESERVED_CONCURRENCY = 20


def _pipeline() -> tuple[dict[str, str], Callable[..., dict[str, Any]]]:
    from memory_engine.domain import pipeline  # the one definition, shared with the local runner

    return pipeline.STEP_FUNCTION_NAMES, pipeline.build_asl


class Ingestion(Construct):
    """Bucket, task functions, the two state machines (Standard for large files, Express for small
    documents; one definition) and the EventBridge rules that start them by object size."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, database: Database,
        functions: FunctionFactory,
    ) -> None:
        super().__init__(scope, construct_id)
        access_logs = s3.Bucket(
            self, "AccessLogs",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.bucket = s3.Bucket(
            self, "Documents",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            versioned=False,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="documents/",
            lifecycle_rules=[
                s3.LifecycleRule(id="work-files", prefix=c.S3_WORK_PREFIX, expiration=Duration.days(7)),
                s3.LifecycleRule(id="abort-multipart", abort_incomplete_multipart_upload_after=Duration.days(1)),
            ],
            # The web console (served by the API, another origin) PUTs files to the presigned URLs of
            # POST /v1/documents/uploads. Any origin may: the presigned URL itself is the credential
            # (one key, one content type, expiring), and nothing but PUT is allowed.
            cors=[s3.CorsRule(allowed_methods=[s3.HttpMethods.PUT], allowed_origins=["*"],
                              allowed_headers=["content-type"], max_age=3600)],
            removal_policy=RemovalPolicy.RETAIN,
        )
        # EventBridge notifications as the bucket's own property: CDK's `event_bridge_enabled` sets them
        # through a custom resource (one more Lambda with a '*' policy) that an own bucket does not need
        cfn_bucket = self.bucket.node.default_child
        assert isinstance(cfn_bucket, s3.CfnBucket)
        cfn_bucket.notification_configuration = s3.CfnBucket.NotificationConfigurationProperty(
            event_bridge_configuration=s3.CfnBucket.EventBridgeConfigurationProperty(event_bridge_enabled=True))

        # signs converter callback URLs (Extract) and verifies them (the API's callback route)
        self.callback_secret = secretsmanager.Secret(
            self, "ConverterCallbackSecret",
            description="memory-engine: HMAC key of converter callback URLs",
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
        )
        ack(self.callback_secret, "AwsSolutions-SMG4",
            "An HMAC key for callback URLs that expire within the conversion deadline (at most ~2 h); rotating it "
            "would only invalidate the URLs of conversions in flight. Replace the secret to rotate it.")

        step_names, build_asl = _pipeline()
        self.functions: dict[str, lambda_.Function] = {}
        substitutions: dict[str, str] = {}
        for placeholder, handler in step_names.items():
            spec = STEP_ACCESS.get(handler, DEFAULT_STEP_ACCESS)
            name = "".join(part.title() for part in handler.split("_"))
            function = functions.create(
                self, f"{name}Function",
                FunctionSpec(
                    area=c.FUNCTION_INGESTION, handler=handler, service=f"{c.FUNCTION_INGESTION}-{handler.replace('_', '-')}",
                    timeout=spec.timeout, memory_size=spec.memory_size,
                    reserved_concurrency=EMBED_RESERVED_CONCURRENCY if spec.embeds else None,
                    description=f"memory-engine ingestion step {handler}",
                ),
                environment={c.ENV_DOCUMENTS_BUCKET: self.bucket.bucket_name},
            )
            self._grant_objects(function, "s3:GetObject", spec.read)
            self._grant_objects(function, "s3:PutObject", spec.write)
            self._grant_objects(function, "s3:DeleteObject", spec.delete)
            self._grant_list(function, spec.list_prefixes, any_key=spec.heads_objects)
            if spec.embeds:
                grant_bedrock(self, function, config.embedding_model)
            if spec.converts:
                self._grant_converting(function)
            database.connect_as_app(function)
            self.functions[handler] = function
            substitutions[placeholder] = function.function_arn
            assert function.role is not None
            for prefix in ("_work", "projects"):
                ack(function.role, f"AwsSolutions-IAM5[Resource::{arn_of(self.bucket)}/{prefix}/*]",
                    f"The {handler} step reads/writes objects under {prefix}/ only; object keys are per project "
                    "and document, so the grant is a key prefix, never the whole bucket.")

        def definition(timeout: Duration, *, express: bool = False) -> str:
            return json.dumps(build_asl(map_max_concurrency=config.map_max_concurrency,
                                        timeout_seconds=int(timeout.to_seconds()), express=express))

        # One definition, two machines: Standard for large files (long PDFs, exactly-once, up to 2 h),
        # Express for documents of at most SMALL_DOCUMENT_BYTES (billed per request, not per state
        # transition; at-least-once, which the idempotent steps absorb). docs/ingestion.md has the costs.
        standard_timeout, express_timeout = Duration.hours(2), Duration.seconds(EXPRESS_TIMEOUT_SECONDS)
        self.state_machine = self._state_machine("Pipeline", definition(standard_timeout), substitutions,
                                                 sfn.StateMachineType.STANDARD, standard_timeout, sfn.LogLevel.ALL)
        # Express cannot wait for a task token: a run awaiting a converter's callback is handed to Standard
        self.express_state_machine = self._state_machine(
            "SmallDocumentPipeline", definition(express_timeout, express=True),
            {**substitutions, STANDARD_MACHINE_PLACEHOLDER: self.state_machine.state_machine_arn},
            sfn.StateMachineType.EXPRESS, express_timeout, sfn.LogLevel.ERROR,  # Express keeps no history but its logs
        )
        self.state_machine.grant_start_execution(self.express_state_machine)
        for handler, function in self.functions.items():
            if STEP_ACCESS.get(handler, DEFAULT_STEP_ACCESS).resumes:
                # a policy of its own, not the function's default one: the machine invokes this function,
                # so the function must not wait for a policy that names the machine (a dependency cycle)
                assert function.role is not None
                iam.Policy(self, f"{handler.title().replace('_', '')}ResumesRuns", roles=[function.role], statements=[
                    iam.PolicyStatement(actions=["states:SendTaskSuccess", "states:SendTaskFailure"],
                                        resources=[self.state_machine.state_machine_arn])])
        ack(self.express_state_machine, "AwsSolutions-SF1",
            "The Express machine for small documents logs ERROR events only: each document's outcome (status, "
            "error) is recorded in the database by the pipeline itself, and logging ALL events would cost about as "
            "much CloudWatch ingestion as the Express executions do (docs/ingestion.md). The Standard machine logs ALL.")

        # S3 -> EventBridge (default bus) -> state machine; the execution input is the event itself.
        self.rule_dead_letters = sqs.Queue(
            self, "RuleDeadLetters", retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
        )
        ack(self.rule_dead_letters, "AwsSolutions-SQS3",
            "This queue IS a dead-letter queue: the EventBridge rule's target DLQ for S3 events it could not deliver "
            "to the state machine (alarmed in Observability).")
        self.object_created_rule = self._object_created_rule(
            "ObjectCreated", [">", SMALL_DOCUMENT_BYTES], self.state_machine,
            f"documents over {SMALL_DOCUMENT_BYTES // 1024} KiB under projects/ start the Standard ingestion machine")
        self.small_object_created_rule = self._object_created_rule(
            "SmallObjectCreated", ["<=", SMALL_DOCUMENT_BYTES], self.express_state_machine,
            f"documents up to {SMALL_DOCUMENT_BYTES // 1024} KiB under projects/ start the Express ingestion machine")

    def _state_machine(self, construct_id: str, definition: str, substitutions: dict[str, str],
                       kind: sfn.StateMachineType, timeout: Duration, log_level: sfn.LogLevel) -> sfn.StateMachine:
        machine = sfn.StateMachine(
            self, construct_id,
            definition_body=sfn.DefinitionBody.from_string(definition),
            definition_substitutions=substitutions,
            state_machine_type=kind,
            timeout=timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=logs.LogGroup(self, f"{construct_id}Logs", retention=logs.RetentionDays.ONE_MONTH,
                                          removal_policy=RemovalPolicy.DESTROY),
                level=log_level,
                include_execution_data=False,  # payloads carry document text
            ),
        )
        for function in self.functions.values():
            function.grant_invoke(machine)
            ack(machine.role, f"AwsSolutions-IAM5[Resource::{arn_of(function)}:*]",
                "lambda:InvokeFunction on the pipeline's own task function and its versions/aliases (CDK grantInvoke).")
        ack(machine.role, "AwsSolutions-IAM5[Resource::*]",
            "Step Functions logging (logs:CreateLogDelivery, ...DescribeLogGroups) and X-Ray tracing actions "
            "(xray:PutTraceSegments, ...) are only authorized on '*'.")
        return machine

    def _object_created_rule(self, construct_id: str, size: list[Any], machine: sfn.StateMachine,
                             description: str) -> events.Rule:
        """S3 -> EventBridge (default bus) -> a state machine, for object sizes matching ``size``
        (an EventBridge numeric matcher); the execution input is the event itself."""
        return events.Rule(
            self, construct_id,
            description=description,
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [self.bucket.bucket_name]},
                    "object": {"key": [{"prefix": c.S3_PROJECT_PREFIX}], "size": [{"numeric": size}]},
                },
            ),
            targets=[targets.SfnStateMachine(
                machine, dead_letter_queue=self.rule_dead_letters, retry_attempts=8, max_event_age=Duration.hours(24),
            )],
        )

    def _grant_converting(self, function: lambda_.Function) -> None:
        """Extract: Textract text detection (the `ocr` converter) and the callback-signing secret."""
        function.add_to_role_policy(iam.PolicyStatement(actions=list(TEXTRACT_ACTIONS), resources=["*"]))
        self.callback_secret.grant_read(function)
        function.add_environment(c.ENV_CALLBACK_SECRET_ARN, self.callback_secret.secret_arn)
        assert function.role is not None
        ack(function.role, "AwsSolutions-IAM5[Resource::*]",
            "Textract's DetectDocumentText, StartDocumentTextDetection and GetDocumentTextDetection support no "
            "resource-level permissions (the service authorization reference lists no resource types for them); "
            "Textract reads the object with this function's own s3:GetObject on projects/.")

    def grant_events(self, bus: Any) -> None:
        """The steps that end a run publish document.ready / document.failed on ``bus``."""
        for handler, function in self.functions.items():
            if STEP_ACCESS.get(handler, DEFAULT_STEP_ACCESS).publishes:
                bus.grant_put_events_to(function)
                function.add_environment(c.ENV_EVENT_BUS_NAME, bus.event_bus_name)

    def grant_public_url(self, url: str) -> None:
        """Extract hands converters URLs on the HTTP API (callback, and the document's presigned GET)."""
        for handler, function in self.functions.items():
            if STEP_ACCESS.get(handler, DEFAULT_STEP_ACCESS).converts:
                function.add_environment(c.ENV_PUBLIC_URL, url)

    def allow_converter_hosts(self, hosts: str, api_function: lambda_.Function) -> None:
        """CONVERTER_ALLOWED_HOSTS where converter URLs are checked: the API (rule writes) and Extract
        (each call, on the resolved address; docs/security.md section 8 says what Extract can reach)."""
        api_function.add_environment(c.ENV_CONVERTER_ALLOWED_HOSTS, hosts)
        for handler, function in self.functions.items():
            if STEP_ACCESS.get(handler, DEFAULT_STEP_ACCESS).converts:
                function.add_environment(c.ENV_CONVERTER_ALLOWED_HOSTS, hosts)

    def grant_api(self, function: lambda_.Function) -> None:
        """What the API function needs: presign uploads / write text documents under projects/,
        delete documents, start (re-)ingestion runs, and verify converter callbacks and resume the
        runs that wait for them."""
        for action in ("s3:PutObject", "s3:GetObject", "s3:DeleteObject"):
            self._grant_objects(function, action, (PROJECTS,))
        self._grant_objects(function, "s3:DeleteObject", (WORK,))  # deleting a document drops its work files
        self._grant_list(function, (), any_key=True)  # re-ingest HEADs the stored object (404 vs 403)
        self.state_machine.grant_start_execution(function)
        self.express_state_machine.grant_start_execution(function)
        self.state_machine.grant_task_response(function)
        self.callback_secret.grant_read(function)
        function.add_environment(c.ENV_CALLBACK_SECRET_ARN, self.callback_secret.secret_arn)
        function.add_environment(c.ENV_DOCUMENTS_BUCKET, self.bucket.bucket_name)
        function.add_environment(c.ENV_STATE_MACHINE_ARN, self.state_machine.state_machine_arn)
        function.add_environment(c.ENV_EXPRESS_STATE_MACHINE_ARN, self.express_state_machine.state_machine_arn)
        assert function.role is not None
        ack(function.role, f"AwsSolutions-IAM5[Resource::{arn_of(self.bucket)}/projects/*]",
            "The API presigns uploads, writes text documents and deletes documents under projects/<project_id>/; "
            "the project id is only known per request, so the grant is the projects/ prefix.")
        ack(function.role, f"AwsSolutions-IAM5[Resource::{arn_of(self.bucket)}/_work/*]",
            "Deleting a document also deletes its intermediate pipeline objects under _work/<document_id>/ "
            "(s3:DeleteObject only).")

    def _grant_objects(self, function: lambda_.Function, action: str, prefixes: tuple[str, ...]) -> None:
        """One object-level action on key prefixes (no bucket-level or wildcard actions)."""
        if prefixes:
            function.add_to_role_policy(iam.PolicyStatement(
                actions=[action], resources=[self.bucket.arn_for_objects(prefix) for prefix in prefixes]
            ))

    def _grant_list(self, function: lambda_.Function, prefixes: tuple[str, ...], *, any_key: bool) -> None:
        """s3:ListBucket, limited to key prefixes unless the function must see 404 for missing objects."""
        if any_key:
            function.add_to_role_policy(iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn]))
        elif prefixes:
            function.add_to_role_policy(iam.PolicyStatement(
                actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": list(prefixes)}},
            ))
