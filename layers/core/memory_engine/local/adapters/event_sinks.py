"""Local stand-ins for the event bus and the dead-letter queue: they log, remember, and (for
dead letters) write a JSON file under ``$MEMORY_ENGINE_HOME/dead-letters/`` to inspect or resend."""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memory_engine.ports.events import DeadLetter, DeadLetterSink, EventPublisher

logger = logging.getLogger(__name__)

#: How many events/letters each recorder keeps in memory (oldest dropped first).
KEEP = 1_000


class RecordingPublisher(EventPublisher):
    """Logs each published event and keeps the most recent ones in ``events``."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def publish(self, detail_type: str, detail: dict[str, Any]) -> str | None:
        logger.info("event %s: %s", detail_type, json.dumps(detail, default=str))
        with self._lock:
            self.events.append({"detail-type": detail_type, "detail": detail})
            del self.events[:-KEEP]
        return None


class LocalDeadLetters(DeadLetterSink):
    """Keeps letters in ``letters`` and, when given a folder, writes each as ``<message id>.json``."""

    def __init__(self, folder: Path | None = None) -> None:
        self.letters: list[DeadLetter] = []
        self.folder = folder
        self._lock = threading.Lock()

    def send(self, letter: DeadLetter) -> None:
        logger.warning("dead letter %s after %d attempt(s): %s", letter.message_id, letter.attempts, letter.reason)
        with self._lock:
            self.letters.append(letter)
            del self.letters[:-KEEP]
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            record = {**asdict(letter), "at": letter.at.isoformat()}
            safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in letter.message_id) or "letter"
            (self.folder / f"{safe}.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
