"""The local S3 stand-in: watches $MEMORY_ENGINE_HOME/drop/ (built by the ingestion issue)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_engine.bootstrap import Container


def build(container: Container) -> Any:
    return None
