"""Deployment settings of the CDK app, read from CDK context (``-c key=value``) with safe defaults.

The model ids and the embedding dimension come from the same defaults as the runtime settings
(:mod:`memory_engine.settings`), so infra and code cannot disagree about them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constructs import Construct

from memory_engine.settings import CHAT_DEFAULTS, EMBEDDING_DEFAULTS, ChatProvider, EmbeddingProvider

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_AZS = ("us-east-1a", "us-east-1b")


def _flag(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class DeploymentConfig:
    """Every knob of one deployment. Build it with :meth:`from_context`."""

    embedding_model: str = EMBEDDING_DEFAULTS[EmbeddingProvider.BEDROCK][0]
    embedding_dimensions: int = EMBEDDING_DEFAULTS[EmbeddingProvider.BEDROCK][1]
    chat_model: str = CHAT_DEFAULTS[ChatProvider.BEDROCK]
    availability_zones: tuple[str, ...] = DEFAULT_AZS
    #: 0 keeps the functions in isolated subnets that reach AWS only through VPC endpoints.
    nat_gateways: int = 0
    db_min_acu: float = 0.5
    db_max_acu: float = 8.0
    db_readers: int = 1
    #: Reserved concurrency caps how many connections the functions can open through the proxy.
    #: Off for accounts whose Lambda quota is still the new-account default of 10.
    reserved_concurrency: bool = True
    #: None: use the built dependency layer when present, else a placeholder (synth/tests only).
    layers_prebuilt: bool | None = None
    map_max_concurrency: int = 4
    #: CONVERTER_ALLOWED_HOSTS of the API (rule writes) and Extract (converter calls): comma-separated
    #: ``host`` / ``host:port`` a converter may name although it is not a public address. Empty: none.
    converter_allowed_hosts: str = ""

    @classmethod
    def from_context(cls, scope: Construct) -> DeploymentConfig:
        node = scope.node

        def ctx(name: str) -> Any:
            return node.try_get_context(name)

        base = cls()
        azs = ctx("availability_zones")
        prebuilt = ctx("layers_prebuilt")
        return cls(
            embedding_model=ctx("embedding_model") or base.embedding_model,
            embedding_dimensions=int(ctx("embedding_dimensions") or base.embedding_dimensions),
            chat_model=ctx("chat_model") or base.chat_model,
            availability_zones=tuple(azs.split(",") if isinstance(azs, str) else azs or base.availability_zones),
            nat_gateways=int(ctx("nat_gateways") or 0),
            db_min_acu=float(ctx("db_min_acu") or base.db_min_acu),
            db_max_acu=float(ctx("db_max_acu") or base.db_max_acu),
            db_readers=int(ctx("db_readers") if ctx("db_readers") is not None else base.db_readers),
            reserved_concurrency=_flag(ctx("reserved_concurrency"), base.reserved_concurrency),
            layers_prebuilt=None if prebuilt is None else _flag(prebuilt, False),
            map_max_concurrency=int(ctx("map_max_concurrency") or base.map_max_concurrency),
            converter_allowed_hosts=str(ctx("converter_allowed_hosts") or base.converter_allowed_hosts),
        )

    def reserved(self, value: int) -> int | None:
        return value if self.reserved_concurrency else None
