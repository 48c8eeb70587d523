"""Expiry: an EventBridge Scheduler schedule invokes a small sweep Lambda every minute."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from memory_engine import constants as c
from memory_engine.services.expiry import SWEEP_INTERVAL_SECONDS
from memory_engine_infra.database import Database
from memory_engine_infra.lambdas import FunctionFactory, FunctionSpec
from memory_engine_infra.nag import ack, arn_of

SWEEP_TIMEOUT = Duration.minutes(2)
#: A missed tick is not worth replaying late: the next one sweeps the same rows.
MAX_EVENT_AGE = Duration.minutes(5)
RETRY_ATTEMPTS = 2


class Expiry(Construct):
    """The sweep function (database access as the app user, nothing else) and its schedule."""

    def __init__(self, scope: Construct, construct_id: str, *, database: Database, functions: FunctionFactory) -> None:
        super().__init__(scope, construct_id)
        self.sweeper = functions.create(
            self, "SweepFunction",
            FunctionSpec(area=c.FUNCTION_EXPIRY, handler="lambda_handler", service=c.FUNCTION_EXPIRY, timeout=SWEEP_TIMEOUT,
                         memory_size=256, reserved_concurrency=1,
                         description="memory-engine: invalidate entries past expires_at (reason expired)"),
        )
        database.connect_as_app(self.sweeper)
        self.dead_letter_queue = sqs.Queue(
            self, "DeadLetters", retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
        )
        ack(self.dead_letter_queue, "AwsSolutions-SQS3",
            "This queue IS a dead-letter queue: EventBridge Scheduler's DLQ for expiry-sweep invocations it could not "
            "deliver (alarmed in Observability).")
        self.scheduler_role = iam.Role(
            self, "SchedulerRole", assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"),
            description="memory-engine: EventBridge Scheduler invokes the expiry sweep",
        )
        ack(self.scheduler_role, f"AwsSolutions-IAM5[Resource::{arn_of(self.sweeper)}:*]",
            "EventBridge Scheduler may invoke the expiry sweep function and its versions only (CDK grantInvoke).")
        self.schedule = scheduler.Schedule(
            self, "Schedule",
            schedule=scheduler.ScheduleExpression.rate(Duration.seconds(SWEEP_INTERVAL_SECONDS)),
            description="memory-engine: expiry sweep",
            target=scheduler_targets.LambdaInvoke(
                self.sweeper, role=self.scheduler_role, dead_letter_queue=self.dead_letter_queue,
                max_event_age=MAX_EVENT_AGE, retry_attempts=RETRY_ATTEMPTS,
            ),
        )
