"""Queueing ``turn.completed`` events on the extraction queue (SQS) directly, as the bus rule does."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from memory_engine.errors import DependencyError
from memory_engine.ports.events import MessageStatus


class SqsEventQueue:
    """Implements :class:`memory_engine.ports.events.EventQueue` on AWS: the message body is the
    EventBridge-shaped event, exactly what the ``turn.completed`` rule puts on the same queue, so
    the extraction consumer cannot tell the two apart. ``wait`` is not available (None)."""

    def __init__(self, client: Any, *, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def submit(self, event: dict[str, Any]) -> str:
        """Raises DependencyError when SQS refuses the message."""
        try:
            answer = self._client.send_message(QueueUrl=self._queue_url, MessageBody=json.dumps(event))
        except (ClientError, BotoCoreError) as exc:
            raise DependencyError(f"queueing the turn for extraction failed: {exc}") from exc
        return str(answer["MessageId"])

    def wait(self, message_id: str, timeout: float = 60.0) -> MessageStatus | None:
        return None
