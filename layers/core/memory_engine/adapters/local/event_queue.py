"""The local EventBridge -> SQS stand-in (built by the extraction issue)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_engine.bootstrap import Container


def build(container: Container) -> Any:
    return None
