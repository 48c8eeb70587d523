"""Ports for the event side of extraction: publishing results and parking undeliverable events."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol


class EventPublisher(ABC):
    """Publishes an event on the engine's bus (EventBridge on AWS, an in-memory recorder locally).

    ``publish`` raises :class:`memory_engine.errors.DependencyError` when the bus rejects the event.
    """

    @abstractmethod
    def publish(self, detail_type: str, detail: dict[str, Any]) -> str | None:
        """Publish one event; returns the bus's event id when it gives one."""


class NoEventBus(EventPublisher):
    """A function deployed without a bus (``EVENT_BUS_NAME``): the steps that publish get one from the
    stack, so a publish here is a deployment error, said as one, never an event quietly lost."""

    def publish(self, detail_type: str, detail: dict[str, Any]) -> str | None:
        from memory_engine.errors import ConfigurationError

        raise ConfigurationError(f"EVENT_BUS_NAME is not set: {detail_type} cannot be published")


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


#: Where a queued event is: waiting or being delivered, delivered, or parked as a dead letter.
MessageStatus = Literal["queued", "in_flight", "succeeded", "dead_lettered"]


class EventQueue(Protocol):
    """Queues ``turn.completed`` events for the extraction consumer (the local runtime's stand-in for
    EventBridge -> SQS; on AWS producers put events on the bus directly)."""

    def submit(self, event: dict[str, Any]) -> str:
        """Queue one EventBridge-shaped event; returns its message id."""
        ...

    def wait(self, message_id: str, timeout: float = 60.0) -> MessageStatus | None:
        """Block until the message is delivered or dead-lettered, or ``timeout``; its status (None: unknown id)."""
        ...
