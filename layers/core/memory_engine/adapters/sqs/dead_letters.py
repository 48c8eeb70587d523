"""Parking undeliverable events on the extraction dead-letter queue (SQS)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from memory_engine.constants import ENV_EXTRACTION_DLQ_URL  # noqa: F401  (re-exported for callers)
from memory_engine.errors import DependencyError
from memory_engine.ports.events import DeadLetter, DeadLetterSink

#: SQS message attributes are capped at 256 KB with the body; reasons are short, keep them so.
MAX_REASON_CHARS = 1_000


class SqsDeadLetterSink(DeadLetterSink):
    """Sends the original message body to the DLQ with the reason in message attributes, the
    same queue SQS redrives exhausted retries to, so operators find all failures in one place."""

    def __init__(self, client: Any, *, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def send(self, letter: DeadLetter) -> None:
        try:
            self._client.send_message(
                QueueUrl=self._queue_url,
                MessageBody=letter.body,
                MessageAttributes={
                    "reason": {"DataType": "String", "StringValue": letter.reason[:MAX_REASON_CHARS] or "unknown"},
                    "original_message_id": {"DataType": "String", "StringValue": letter.message_id or "unknown"},
                    "attempts": {"DataType": "Number", "StringValue": str(letter.attempts)},
                },
            )
        except (ClientError, BotoCoreError) as exc:
            raise DependencyError(f"sending to the dead-letter queue failed: {exc}") from exc
