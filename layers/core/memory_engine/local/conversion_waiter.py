"""The local stand-in for a Step Functions task token: a run parked in AwaitConversion is resumed
when the recorded conversion shows the converter's callback delivered it (:meth:`ConversionWaiter.check`,
polled by the ingestion slots' parking lot, ``local/ingestion_slots.py``), or failed when the
deadline passes. :meth:`ConversionWaiter.__call__` waits on the calling thread instead
(:meth:`~memory_engine.local.pipeline.PipelineRunner.run`, the tests' synchronous runs).

Polling the database (not an in-process signal) because the callback may be served by another
process (the local engine's worker processes serve HTTP requests)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory_engine.domain.documents import DocumentRun
from memory_engine.local.pipeline import TaskFailed, TaskTimedOut
from memory_engine.ports.conversions import ConversionRepository
from memory_engine.services.ingestion.callbacks import converted_run


@dataclass
class ConversionWaiter:
    """A :data:`memory_engine.local.pipeline.TokenWaiter`. ``conversions`` gives the repository when
    a run first waits (the database is not needed to build the runner)."""

    conversions: Callable[[], ConversionRepository]
    poll_seconds: float = 0.25
    clock: Callable[[], float] = field(default=time.monotonic)

    def check(self, state: dict[str, Any], task_token: str) -> dict[str, Any] | None:
        """A :data:`memory_engine.local.pipeline.TokenCheck`: the resumed run once the callback
        delivered the pages, None while they are awaited; raises TaskFailed for a delivered error
        (or a conversion that disappeared: the document was deleted or re-ingested)."""
        run = DocumentRun.model_validate(state)
        conversion = self.conversions().get(run.document_id, run.generation)
        if conversion is None:
            raise TaskFailed("ConverterFailed", "internal: the awaited conversion disappeared; re-ingest the document")
        if not conversion.delivered:
            return None
        if conversion.error is not None:
            raise TaskFailed("ConverterFailed", conversion.error)
        return converted_run(conversion, run).model_dump(mode="json")

    def __call__(self, state: dict[str, Any], task_token: str, timeout: float) -> dict[str, Any]:
        deadline = self.clock() + timeout
        while (output := self.check(state, task_token)) is None:
            if self.clock() >= deadline:
                raise TaskTimedOut(f"no callback within {timeout:g} s")
            time.sleep(self.poll_seconds)
        return output


class LocalTaskCallbacks:
    """:class:`memory_engine.ports.conversions.TaskCallbacks` locally: nothing to send, the
    :class:`ConversionWaiter` sees the delivery in the database."""

    def succeed(self, task_token: str, output: dict[str, Any]) -> None:
        return None

    def fail(self, task_token: str, error: str, cause: str) -> None:
        return None
