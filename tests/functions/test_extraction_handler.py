"""The extraction consumer Lambda with real SQS event JSON, AWS via moto: EventBridge rule -> SQS
-> handler, partial batch failures, the redrive policy's DLQ, explicit rejection of invalid events,
and memory.extraction.completed on the bus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memory_engine.adapters.eventbridge.publisher import EventBridgePublisher
from memory_engine.adapters.sqs.dead_letters import SqsDeadLetterSink
from memory_engine.bootstrap import Container, set_container
from memory_engine.errors import ChatModelError
from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder
from memory_engine.local.lambda_runtime import invoke
from memory_engine.ports.chat import ChatRequest
from memory_engine.settings import Settings
from tests.support.extraction import ScriptedChatModel, fact, sqs_record, turn_event

REGION = "us-east-1"
BUS = "memory-engine-test"
NURSE = fact("Sam works at Acme as a nurse.", "Sam", "works at", "Acme", ("Sam", "person"), ("Acme", "organization"))


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """moto: the bus, the consumer queue with its DLQ (maxReceiveCount 2), a queue for our own events."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        events = boto3.client("events", region_name=REGION)
        dlq_url = sqs.create_queue(QueueName="extraction-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        queue_url = sqs.create_queue(QueueName="extraction", Attributes={
            "VisibilityTimeout": "0",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"}),
        })["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        completed_url = sqs.create_queue(QueueName="completed")["QueueUrl"]
        completed_arn = sqs.get_queue_attributes(
            QueueUrl=completed_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.create_event_bus(Name=BUS)
        events.put_rule(Name="turns", EventBusName=BUS, EventPattern=json.dumps({"detail-type": ["turn.completed"]}))
        events.put_targets(Rule="turns", EventBusName=BUS, Targets=[{"Id": "consumer", "Arn": queue_arn}])
        events.put_rule(Name="completed", EventBusName=BUS, EventPattern=json.dumps(
            {"source": ["memory-engine"], "detail-type": ["memory.extraction.completed"]}))
        events.put_targets(Rule="completed", EventBusName=BUS, Targets=[{"Id": "watcher", "Arn": completed_arn}])
        yield {"sqs": sqs, "events": events, "queue_url": queue_url, "dlq_url": dlq_url, "completed_url": completed_url}


@pytest.fixture
def chat() -> ScriptedChatModel:
    return ScriptedChatModel()


@pytest.fixture
def container(
    database_url: str, embedder: OnnxMiniLMEmbedder, chat: ScriptedChatModel, aws: dict[str, Any]
) -> Iterator[Container]:
    """The Lambda's composition root on the test database, with moto-backed EventBridge and DLQ."""
    built = Container(
        Settings(DATABASE_URL=database_url, EVENT_BUS_NAME=BUS),  # type: ignore[call-arg]
        embedder=embedder, chat_model=chat,
        event_publisher=EventBridgePublisher(aws["events"], bus_name=BUS),
        dead_letters=SqsDeadLetterSink(aws["sqs"], queue_url=aws["dlq_url"]),
    )
    set_container(built)
    yield built
    set_container(None)
    built.close()


@pytest.fixture
def memory(container: Container) -> tuple[str, str]:
    project_id = container.projects.get_or_create_project("acme").id
    return project_id, container.memories.create(project_id, name="sam").id


def _receive(sqs: Any, url: str) -> list[dict[str, Any]]:
    return list(sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"], WaitTimeSeconds=0,
    ).get("Messages", []))


def _as_lambda_records(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What the SQS event source mapping hands the function for these received messages."""
    records = []
    for message in messages:
        record = sqs_record(message["Body"], message_id=message["MessageId"],
                            receive_count=int(message["Attributes"]["ApproximateReceiveCount"]))
        record["receiptHandle"] = message["ReceiptHandle"]
        records.append(record)
    return {"Records": records}


def _poll_once(aws: dict[str, Any]) -> tuple[int, list[str]]:
    """One event source mapping poll: receive, invoke, delete the successes. (received, failed ids)"""
    messages = _receive(aws["sqs"], aws["queue_url"])
    if not messages:
        return 0, []
    response = invoke("extraction/handler", _as_lambda_records(messages))
    failed = [item["itemIdentifier"] for item in response["batchItemFailures"]]
    for message in messages:
        if message["MessageId"] not in failed:
            aws["sqs"].delete_message(QueueUrl=aws["queue_url"], ReceiptHandle=message["ReceiptHandle"])
    return len(messages), failed


def _put_turn(aws: dict[str, Any], event: dict[str, Any]) -> None:
    """A producer publishing the turn on the bus (EventBridge assigns id, time, account...)."""
    result = aws["events"].put_events(Entries=[{
        "EventBusName": BUS, "Source": event["source"], "DetailType": "turn.completed",
        "Detail": json.dumps(event["detail"]),
    }])
    assert result["FailedEntryCount"] == 0


def test_a_turn_on_the_bus_is_extracted_by_the_consumer_and_the_completion_is_published(
    container: Container, chat: ScriptedChatModel, aws: dict[str, Any], memory: tuple[str, str]
) -> None:
    # Given a producer that publishes a turn on the bus
    project_id, memory_id = memory
    chat.script(json.dumps([NURSE]))
    _put_turn(aws, turn_event(project_id=project_id, memory_id=memory_id))
    # When the event source mapping delivers the rule's SQS message to the consumer
    received, failed = _poll_once(aws)
    # Then the message is processed and removed, and the fact is written
    assert (received, failed) == (1, [])
    assert _receive(aws["sqs"], aws["queue_url"]) == []
    # And memory.extraction.completed reaches the bus with the run summary
    (published,) = _receive(aws["sqs"], aws["completed_url"])
    body = json.loads(published["Body"])
    assert body["source"] == "memory-engine" and body["detail-type"] == "memory.extraction.completed"
    assert body["detail"]["status"] == "completed" and body["detail"]["summary"]["created"] == 1
    run = container.extraction_runs.get_by_event(project_id, body["detail"]["event_id"])
    assert run is not None and run.id == body["detail"]["run_id"]


def test_a_failing_record_is_reported_alone_and_ends_in_the_dlq_after_max_receives(
    container: Container, chat: ScriptedChatModel, aws: dict[str, Any], memory: tuple[str, str]
) -> None:
    # Given two turns on the queue; the model answers the first and times out on every try of the second
    project_id, memory_id = memory
    good = turn_event(project_id=project_id, memory_id=memory_id, turn_id="good")
    bad = turn_event(project_id=project_id, memory_id=memory_id, turn_id="bad",
                     messages=[{"role": "user", "content": "My sister Ana lives in Braga."}])
    replies = {"good": json.dumps([NURSE])}
    timeout = ChatModelError("Bedrock Converse failed: Read timeout")

    class PerTurn(ScriptedChatModel):
        def _complete(self, request: ChatRequest) -> str:
            if "Braga" in request.messages[-1].content:
                raise timeout
            return replies["good"]

    container.__dict__["chat_model"] = PerTurn()
    container.__dict__.pop("extraction", None)
    for event in (good, bad):
        aws["sqs"].send_message(QueueUrl=aws["queue_url"], MessageBody=json.dumps(event))
    # When the consumer polls: only the failing record is reported as a batch item failure
    received, failed = _poll_once(aws)
    bad_ids = failed
    assert received == 2 and len(bad_ids) == 1
    # And after maxReceiveCount (2) deliveries SQS moves it to the DLQ
    received, failed = _poll_once(aws)
    assert (received, failed) == (1, bad_ids)
    assert _poll_once(aws) == (0, [])
    (dead,) = _receive(aws["sqs"], aws["dlq_url"])
    assert json.loads(dead["Body"])["id"] == bad["id"] and dead["MessageId"] == bad_ids[0]
    # The run records the failure and its attempts; the episode was stored once
    run = container.extraction_runs.get_by_event(project_id, bad["id"])
    assert run.status == "failed" and run.attempts == 2 and "Read timeout" in run.error
    assert container.episodes.get_by_event(project_id, bad["id"]) is not None
    assert container.extraction_runs.get_by_event(project_id, good["id"]).status == "completed"


def test_invalid_events_are_rejected_to_the_dlq_with_the_reason_and_never_retried(
    container: Container, chat: ScriptedChatModel, aws: dict[str, Any], memory: tuple[str, str]
) -> None:
    # Given a non-JSON body, an event missing its memory, and one naming another project's memory
    project_id, memory_id = memory
    other_project = container.projects.get_or_create_project("globex").id
    no_memory = turn_event(project_id=project_id, memory_id=memory_id)
    del no_memory["detail"]["memory_id"]
    foreign = turn_event(project_id=other_project, memory_id=memory_id)
    # and one nested 100 levels deep (JSON pydantic would still parse: the one depth rule refuses it first)
    deep = json.dumps(turn_event(project_id=project_id, memory_id=memory_id))[:-1] + ', "x": ' + "[" * 100 + "]" * 100 + "}"
    bodies = ["this is not json", json.dumps(no_memory), json.dumps(foreign), deep]
    for body in bodies:
        aws["sqs"].send_message(QueueUrl=aws["queue_url"], MessageBody=body)
    # When the consumer polls
    received, failed = _poll_once(aws)
    # Then none is reported as failed (no retry) and each is on the DLQ with why
    assert (received, failed) == (4, [])
    assert _receive(aws["sqs"], aws["queue_url"]) == []
    dead = {m["Body"]: m["MessageAttributes"]["reason"]["StringValue"] for m in _receive(aws["sqs"], aws["dlq_url"])}
    assert set(dead) == set(bodies)
    assert dead["this is not json"].startswith("invalid turn.completed event")
    assert "detail.memory_id: Field required" in dead[json.dumps(no_memory)]
    assert "not found" in dead[json.dumps(foreign)]
    assert dead[deep] == "invalid turn.completed event: the body nests deeper than 64 levels"
    assert chat.calls == [] and container.episodes.get_by_event(other_project, foreign["id"]) is None


def test_a_redelivered_completed_event_does_nothing(
    container: Container, chat: ScriptedChatModel, aws: dict[str, Any], memory: tuple[str, str]
) -> None:
    project_id, memory_id = memory
    chat.script(json.dumps([NURSE]))
    body = json.dumps(turn_event(project_id=project_id, memory_id=memory_id))
    first = invoke("extraction/handler", {"Records": [sqs_record(body)]})
    again = invoke("extraction/handler", {"Records": [sqs_record(body, receive_count=2)]})
    assert first["batchItemFailures"] == [] and again["batchItemFailures"] == []
    assert len(chat.extraction_calls) == 1
    with container.database.connection() as conn:
        count = conn.execute("SELECT count(*) AS n FROM memory_entries WHERE memory_id = %s", (memory_id,)).fetchone()
    assert count["n"] == 1


def test_without_a_dlq_url_an_invalid_event_reaches_the_dlq_by_the_redrive_policy(
    container: Container, aws: dict[str, Any]
) -> None:
    # Given a consumer deployed without EXTRACTION_DLQ_URL (no dead-letter sink)
    container.__dict__["dead_letters"] = None
    aws["sqs"].send_message(QueueUrl=aws["queue_url"], MessageBody='{"detail-type": "turn.completed"}')
    # When it polls, the invalid event is reported as failed (never processed) ...
    received, failed = _poll_once(aws)
    assert received == 1 and len(failed) == 1
    assert _poll_once(aws) == (1, failed)
    # ... and after maxReceiveCount receives SQS moves it to the DLQ instead of retrying forever
    assert _poll_once(aws) == (0, [])
    (dead,) = _receive(aws["sqs"], aws["dlq_url"])
    assert dead["MessageId"] == failed[0]
