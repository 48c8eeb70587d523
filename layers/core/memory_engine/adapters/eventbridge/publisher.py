"""Publishing engine events on an EventBridge bus (``PutEvents``)."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from memory_engine import constants as c
from memory_engine.errors import DependencyError
from memory_engine.ports.events import EventPublisher


class EventBridgePublisher(EventPublisher):
    """Puts events with source ``memory-engine`` on the bus named by ``EVENT_BUS_NAME``."""

    def __init__(self, client: Any, *, bus_name: str, source: str = c.EVENT_SOURCE) -> None:
        self._client = client
        self._bus = bus_name
        self._source = source

    def publish(self, detail_type: str, detail: dict[str, Any]) -> str | None:
        entry = {
            "EventBusName": self._bus, "Source": self._source, "DetailType": detail_type,
            "Detail": json.dumps(detail, default=str, separators=(",", ":")),
        }
        try:
            response = self._client.put_events(Entries=[entry])
        except (ClientError, BotoCoreError) as exc:
            raise DependencyError(f"EventBridge PutEvents on {self._bus} failed: {exc}") from exc
        # PutEvents answers 200 even when an entry is rejected; the entry carries the error
        result = (response.get("Entries") or [{}])[0]
        if response.get("FailedEntryCount") or result.get("ErrorCode"):
            raise DependencyError(
                f"EventBridge rejected the {detail_type} event: {result.get('ErrorCode')}: {result.get('ErrorMessage')}"
            )
        event_id = result.get("EventId")
        return str(event_id) if event_id else None
