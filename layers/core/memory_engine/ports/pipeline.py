"""Starting an ingestion run: Step Functions on AWS, the in-process runner locally."""

from __future__ import annotations

from typing import Any, Protocol


class PipelineStarter(Protocol):
    """``start`` hands a payload to the pipeline and returns at once with a run id.

    The payload is what the state machine takes: an S3 "Object Created" event (enters at
    Register) or a prepared ``DocumentRun`` (enters at Extract). Raises
    :class:`memory_engine.errors.DependencyError` when the run cannot be started.
    """

    def start(self, payload: dict[str, Any], *, name: str | None = None, size_bytes: int | None = None) -> str: ...
