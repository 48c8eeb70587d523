"""Fact extraction: a custom event bus, ``turn.completed`` -> SQS (with DLQ) -> consumer Lambda."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from memory_engine import constants as c
from memory_engine_infra.config import DeploymentConfig
from memory_engine_infra.database import Database
from memory_engine_infra.lambdas import FunctionFactory, FunctionSpec, grant_bedrock

CONSUMER_TIMEOUT = Duration.minutes(2)
#: AWS guidance for SQS -> Lambda: visibility timeout at least 6x the function timeout.
VISIBILITY_TIMEOUT = Duration.minutes(2 * 6)
MAX_RECEIVE_COUNT = 5
BATCH_SIZE = 5
#: At most this many concurrent consumers (the event source mapping's own cap: unlike reserved
#: concurrency it never throttles, so messages are not burnt into the DLQ by throttling).
MAX_CONSUMERS = 5


class Extraction(Construct):
    """Event bus, rule, queue + DLQ and the consumer function."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, database: Database,
        functions: FunctionFactory,
    ) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", description="memory-engine: turn.completed in, memory.* out")
        self.dead_letter_queue = sqs.Queue(
            self, "DeadLetters", retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
        )
        self.queue = sqs.Queue(
            self, "TurnsQueue",
            visibility_timeout=VISIBILITY_TIMEOUT,
            retention_period=Duration.days(4),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=MAX_RECEIVE_COUNT),
        )
        self.rule = events.Rule(
            self, "TurnCompleted",
            event_bus=self.bus,
            description="completed conversation turns -> fact extraction queue",
            event_pattern=events.EventPattern(detail_type=[c.DETAIL_TYPE_TURN_COMPLETED]),
            targets=[targets.SqsQueue(self.queue, dead_letter_queue=self.dead_letter_queue, retry_attempts=8)],
        )
        self.consumer = functions.create(
            self, "ConsumerFunction",
            FunctionSpec(
                area=c.FUNCTION_EXTRACTION, handler="lambda_handler", service=c.FUNCTION_EXTRACTION,
                timeout=CONSUMER_TIMEOUT, memory_size=1024,
                description="memory-engine: turn.completed -> episode + extracted facts",
            ),
            environment={
                c.ENV_EVENT_BUS_NAME: self.bus.event_bus_name,
                # invalid events go to the DLQ at once with their reason instead of by redrive
                c.ENV_EXTRACTION_DLQ_URL: self.dead_letter_queue.queue_url,
            },
        )
        self.consumer.add_event_source(sources.SqsEventSource(
            self.queue, batch_size=BATCH_SIZE, report_batch_item_failures=True, max_concurrency=MAX_CONSUMERS,
        ))
        grant_bedrock(self, self.consumer, config.embedding_model, config.chat_model)
        self.bus.grant_put_events_to(self.consumer)
        self.dead_letter_queue.grant_send_messages(self.consumer)
        database.connect_as_app(self.consumer)

    def alarm_queues(self) -> dict[str, sqs.Queue]:
        return {"Extraction": self.dead_letter_queue}

