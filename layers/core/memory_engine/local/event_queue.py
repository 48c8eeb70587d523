"""The local EventBridge -> SQS -> Lambda stand-in for ``turn.completed`` events.

``POST /v1/events`` (and ``memory-engine events send``) submit the EventBridge-shaped event; a
worker thread delivers it as an SQS batch (``{"Records": [...]}``, the shape the event source
mapping sends) to ``functions/extraction/handler.py`` through the in-process Lambda runtime, so
the consumer code is the one that runs on AWS. Records reported in ``batchItemFailures`` are
redelivered with backoff, like a visibility timeout expiring, up to ``max_attempts``; then they
go to the dead-letter sink, like SQS's redrive policy.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory_engine.local.lambda_runtime import invoke
from memory_engine.ports.events import DeadLetter, DeadLetterSink, MessageStatus

logger = logging.getLogger(__name__)

HANDLER = "extraction/handler"
QUEUE_ARN = "arn:aws:sqs:local:000000000000:memory-engine-extraction"
#: The event source mapping's batch size.
BATCH_SIZE = 10
#: How many finished messages' statuses are remembered for ``wait``.
KEEP_STATUSES = 1_000

Invoker = Callable[[dict[str, Any]], Any]


@dataclass
class _Message:
    id: str
    body: str
    sent_at_ms: int
    attempts: int = 0
    status: MessageStatus = "queued"


def sqs_record(message_id: str, body: str, *, attempts: int, sent_at_ms: int) -> dict[str, Any]:
    """One record of an SQS event as Lambda's event source mapping delivers it."""
    now_ms = int(time.time() * 1000)
    return {
        "messageId": message_id,
        "receiptHandle": f"local-{uuid.uuid4()}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": str(attempts),
            "SentTimestamp": str(sent_at_ms),
            "SenderId": "local",
            "ApproximateFirstReceiveTimestamp": str(now_ms if attempts == 1 else sent_at_ms),
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "local",
    }


def _invoke_handler(event: dict[str, Any]) -> Any:
    return invoke(HANDLER, event, "memory-engine-extraction")


class LocalEventQueue:
    """EventQueue: an in-process queue with one consumer thread (a BackgroundService of `memory-engine dev`).

    ``submit`` starts the worker on first use, so the route works without the dev engine too.
    """

    name = "event-queue"

    def __init__(
        self,
        dead_letters: DeadLetterSink,
        *,
        max_attempts: int = 3,
        retry_delay: float = 1.0,
        invoker: Invoker = _invoke_handler,
    ) -> None:
        self._dead_letters = dead_letters
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self._invoke = invoker
        self._ready: list[tuple[float, int, _Message]] = []
        self._seq = itertools.count()
        self._statuses: OrderedDict[str, _Message] = OrderedDict()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    # --- BackgroundService ---
    def start(self) -> None:
        with self._cond:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="event-queue", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=30)
        self._thread = None

    # --- producer side ---
    def submit(self, event: dict[str, Any]) -> str:
        """Queue one EventBridge event (the SQS message body is its JSON); returns the message id."""
        message = _Message(id=str(uuid.uuid4()), body=json.dumps(event, separators=(",", ":")),
                           sent_at_ms=int(time.time() * 1000))
        with self._cond:
            self._statuses[message.id] = message
            while len(self._statuses) > KEEP_STATUSES:
                self._statuses.popitem(last=False)
            heapq.heappush(self._ready, (time.monotonic(), next(self._seq), message))
            self._cond.notify_all()
        self.start()
        return message.id

    def status(self, message_id: str) -> MessageStatus | None:
        with self._cond:
            message = self._statuses.get(message_id)
            return message.status if message else None

    def wait(self, message_id: str, timeout: float = 60.0) -> MessageStatus | None:
        """Block until the message succeeded or was dead-lettered (or ``timeout``); its status."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                message = self._statuses.get(message_id)
                if message is None or message.status in ("succeeded", "dead_lettered"):
                    return message.status if message else None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return message.status
                self._cond.wait(remaining)

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until every queued message is finished; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(m.status in ("queued", "in_flight") for m in self._statuses.values()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    # --- consumer side ---
    def _next_batch(self) -> list[_Message] | None:
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                if self._ready and self._ready[0][0] <= now:
                    batch: list[_Message] = []
                    while self._ready and self._ready[0][0] <= now and len(batch) < BATCH_SIZE:
                        batch.append(heapq.heappop(self._ready)[2])
                    for message in batch:
                        message.status = "in_flight"
                        message.attempts += 1
                    return batch
                self._cond.wait(self._ready[0][0] - now if self._ready else None)
            return None

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            failed = self._deliver(batch)
            for message in batch:
                self._settle(message, failed=message.id in failed)

    def _deliver(self, batch: list[_Message]) -> set[str]:
        event = {"Records": [sqs_record(m.id, m.body, attempts=m.attempts, sent_at_ms=m.sent_at_ms) for m in batch]}
        try:
            response = self._invoke(event)
        except Exception:
            logger.exception("extraction handler invocation failed; the batch will be redelivered")
            return {m.id for m in batch}
        failures = response.get("batchItemFailures") if isinstance(response, dict) else None
        return {str(item.get("itemIdentifier")) for item in failures or []}

    def _settle(self, message: _Message, *, failed: bool) -> None:
        if failed and message.attempts >= self.max_attempts:
            try:
                self._dead_letters.send(DeadLetter(
                    message.id, message.body,
                    f"extraction failed {message.attempts} time(s); the run's error is on extraction_runs",
                    message.attempts,
                ))
            except Exception:
                logger.exception("could not dead-letter message %s", message.id)
        with self._cond:
            if not failed:
                message.status = "succeeded"
            elif message.attempts >= self.max_attempts:
                message.status = "dead_lettered"
            else:
                message.status = "queued"
                delay = self.retry_delay * 2 ** (message.attempts - 1)
                heapq.heappush(self._ready, (time.monotonic() + delay, next(self._seq), message))
            self._cond.notify_all()
