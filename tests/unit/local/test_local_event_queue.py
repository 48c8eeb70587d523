"""The local EventBridge -> SQS stand-in: SQS-shaped batches, partial failures, retries, dead letters."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from memory_engine.local.adapters.event_sinks import LocalDeadLetters
from memory_engine.local.event_queue import LocalEventQueue


class FakeConsumer:
    """Stands in for the Lambda handler: records batches, fails the message ids it is told to."""

    def __init__(self, fail: set[str] | None = None, crash: bool = False) -> None:
        self.batches: list[list[dict[str, Any]]] = []
        self.fail_events = fail or set()
        self.crash = crash
        self.lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.batches.append(event["Records"])
        if self.crash:
            raise RuntimeError("handler crashed")
        failures = [{"itemIdentifier": r["messageId"]} for r in event["Records"]
                    if json.loads(r["body"])["id"] in self.fail_events]
        return {"batchItemFailures": failures}


@pytest.fixture
def letters(tmp_path: Any) -> LocalDeadLetters:
    return LocalDeadLetters(tmp_path / "dead-letters")


def _queue(consumer: FakeConsumer, letters: LocalDeadLetters) -> Iterator[LocalEventQueue]:
    queue = LocalEventQueue(letters, max_attempts=3, retry_delay=0.01, invoker=consumer)
    yield queue
    queue.stop()


def _event(event_id: str) -> dict[str, Any]:
    return {"id": event_id, "detail-type": "turn.completed", "source": "t", "detail": {}}


def test_records_have_the_sqs_event_source_shape(letters: LocalDeadLetters) -> None:
    consumer = FakeConsumer()
    for queue in _queue(consumer, letters):
        message_id = queue.submit(_event("e1"))
        assert queue.wait(message_id, timeout=10) == "succeeded"
    (record,) = consumer.batches[0]
    assert record["messageId"] == message_id and record["eventSource"] == "aws:sqs"
    assert json.loads(record["body"])["id"] == "e1"
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
    assert {"receiptHandle", "eventSourceARN", "awsRegion", "messageAttributes"} <= record.keys()


def test_only_failed_records_are_redelivered_then_dead_lettered(letters: LocalDeadLetters) -> None:
    consumer = FakeConsumer(fail={"bad"})
    for queue in _queue(consumer, letters):
        good, bad = queue.submit(_event("good")), queue.submit(_event("bad"))
        assert queue.wait(bad, timeout=10) == "dead_lettered"
        assert queue.status(good) == "succeeded"
    delivered = [json.loads(r["body"])["id"] for batch in consumer.batches for r in batch]
    assert delivered.count("good") == 1 and delivered.count("bad") == 3
    receive_counts = [r["attributes"]["ApproximateReceiveCount"] for b in consumer.batches for r in b
                      if json.loads(r["body"])["id"] == "bad"]
    assert receive_counts == ["1", "2", "3"]
    (letter,) = letters.letters
    assert letter.message_id == bad and letter.attempts == 3 and json.loads(letter.body)["id"] == "bad"
    assert letters.folder is not None and (letters.folder / f"{bad}.json").exists()


def test_a_crashed_invocation_redelivers_the_whole_batch(letters: LocalDeadLetters) -> None:
    consumer = FakeConsumer(crash=True)
    for queue in _queue(consumer, letters):
        message_id = queue.submit(_event("e1"))
        assert queue.wait(message_id, timeout=10) == "dead_lettered"
    assert len(consumer.batches) == 3


def test_drain_waits_for_every_message(letters: LocalDeadLetters) -> None:
    consumer = FakeConsumer()
    for queue in _queue(consumer, letters):
        ids = [queue.submit(_event(f"e{i}")) for i in range(25)]
        assert queue.drain(timeout=10)
        assert all(queue.status(i) == "succeeded" for i in ids)
    assert sum(len(b) for b in consumer.batches) == 25 and max(len(b) for b in consumer.batches) <= 10
