"""SqsEventQueue against moto's SQS: ``POST /v1/memories/{id}/turns`` with ``extract`` queues the
turn.completed event on the extraction queue exactly as the bus rule delivers it (the body is the
EventBridge-shaped event), and a refused send is a DependencyError."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memory_engine.adapters.sqs.event_queue import SqsEventQueue
from memory_engine.domain.events import TurnCompletedEvent
from memory_engine.errors import DependencyError


@pytest.fixture
def sqs() -> Any:
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


def test_the_message_body_is_the_eventbridge_event_the_consumer_parses(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="extraction")["QueueUrl"]
    event = TurnCompletedEvent.model_validate({
        "id": "turn:abc", "detail-type": "turn.completed", "source": "memory-engine.turns", "time": datetime.now(UTC),
        "detail": {"project_id": "proj_1", "memory_id": "mem_1", "conversation_id": "c", "turn_id": "t1",
                   "occurred_at": datetime.now(UTC), "messages": [{"role": "user", "content": "I like tea."}]},
    })

    message_id = SqsEventQueue(sqs, queue_url=url).submit(event.to_eventbridge())

    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert message["MessageId"] == message_id
    received = TurnCompletedEvent.model_validate(json.loads(message["Body"]))
    assert received.id == "turn:abc" and received.detail.messages[0].content == "I like tea."


def test_a_refused_send_is_a_dependency_error(sqs: Any) -> None:
    queue = SqsEventQueue(sqs, queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/missing")
    with pytest.raises(DependencyError):
        queue.submit({"id": "x"})
    assert queue.wait("anything") is None
