"""Test helpers for fact extraction: a scripted chat model (a fake that subclasses the port),
``turn.completed`` events and the SQS batches Lambda receives."""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory_engine.domain.write_decision import ARBITRATION_SYSTEM_PROMPT
from memory_engine.errors import ChatModelError
from memory_engine.ports.chat import ChatModel, ChatRequest

#: Given (existing fact, new fact) -> the arbitration reply (JSON text).
Arbiter = Callable[[str, str], str]


@dataclass
class ChatCall:
    system: str | None
    user: str
    model: str | None
    timeout: float


def _distinct(existing: str, new: str) -> str:
    return '{"decision": "distinct", "reason": "different facts"}'


class ScriptedChatModel(ChatModel):
    """Extraction calls get the scripted replies in order (an exception instance is raised instead);
    write-funnel arbitration calls are answered by ``arbiter``. Every call is recorded."""

    model_id = "scripted-model"

    def __init__(self) -> None:
        self._replies: list[str | Exception] = []
        self.arbiter: Arbiter = _distinct
        self.calls: list[ChatCall] = []
        self.arbitrations: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def script(self, *replies: str | Exception, arbiter: Arbiter | None = None) -> ScriptedChatModel:
        with self._lock:
            self._replies = list(replies)
            self.arbiter = arbiter or _distinct
            self.calls.clear()
            self.arbitrations.clear()
        return self

    @property
    def extraction_calls(self) -> list[ChatCall]:
        return [c for c in self.calls if c.system != ARBITRATION_SYSTEM_PROMPT]

    def _complete(self, request: ChatRequest) -> str:
        user = request.messages[-1].content
        system = request.system
        with self._lock:
            self.calls.append(ChatCall(system, user, request.model, request.timeout))
            if system == ARBITRATION_SYSTEM_PROMPT:
                facts = [json.loads(line.split(": ", 1)[1]) for line in user.splitlines()[:2]]
                self.arbitrations.append((facts[0], facts[1]))
                return self.arbiter(facts[0], facts[1])
            if not self._replies:
                raise ChatModelError("scripted model has no reply left")
            reply = self._replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def turn_event(
    *,
    project_id: str,
    memory_id: str,
    messages: list[dict[str, Any]] | None = None,
    event_id: str | None = None,
    conversation_id: str = "conv-1",
    turn_id: str = "turn-1",
    occurred_at: str = "2023-05-08T13:56:00Z",
    **detail: Any,
) -> dict[str, Any]:
    """A ``turn.completed`` event as the EventBridge rule delivers it."""
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": "turn.completed",
        "source": "tests.agent",
        "account": "123456789012",
        "time": "2023-05-08T13:56:01Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {
            "project_id": project_id,
            "memory_id": memory_id,
            "conversation_id": conversation_id,
            "turn_id": turn_id,
            "occurred_at": occurred_at,
            "messages": messages or [
                {"role": "user", "content": "Hi! I moved to Lisbon last month. I work at Acme as a nurse."},
                {"role": "assistant", "content": "Welcome to Lisbon! How do you like the job at Acme?"},
            ],
            **detail,
        },
    }


def sqs_record(body: str, *, message_id: str | None = None, receive_count: int = 1) -> dict[str, Any]:
    """One SQS record exactly as Lambda's event source mapping delivers it."""
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": "AQEB" + uuid.uuid4().hex,
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": "1683554161000",
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": "1683554161001",
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:memory-engine-extraction",
        "awsRegion": "us-east-1",
    }


def fact(content: str, subject: str, predicate: str, obj: str, *entities: tuple[str, str], **extra: Any) -> dict[str, Any]:
    """A fact object as the model is asked to return it."""
    return {
        "content": content, "subject": subject, "predicate": predicate, "object": obj,
        "entities": [{"name": n, "type": t} for n, t in entities], "confidence": extra.pop("confidence", 0.9),
        "source_quote": extra.pop("source_quote", content), **extra,
    }
