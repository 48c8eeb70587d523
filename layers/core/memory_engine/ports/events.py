"""Ports for the event side of extraction: publishing results and parking undeliverable events."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


class EventPublisher(ABC):
    """Publishes an event on the engine's bus (EventBridge on AWS, an in-memory recorder locally).

    ``publish`` raises :class:`memory_engine.errors.DependencyError` when the bus rejects the event.
    """

    @abstractmethod
    def publish(self, detail_type: str, detail: dict[str, Any]) -> str | None:
        """Publish one event; returns the bus's event id when it gives one."""


@dataclass(frozen=True)
class DeadLetter:
    """An event the consumer will never process, with why."""

    message_id: str
    body: str
    reason: str
    attempts: int = 1
    at: datetime = field(default_factory=lambda: datetime.now(UTC))


class DeadLetterSink(ABC):
    """Where undeliverable events go (the extraction DLQ on AWS, a list + folder locally).

    ``send`` raises :class:`memory_engine.errors.DependencyError` when the sink is unreachable,
    so the message stays on its queue and is retried instead of being lost.
    """

    @abstractmethod
    def send(self, letter: DeadLetter) -> None:
        """Park ``letter`` for an operator to inspect or redrive."""
