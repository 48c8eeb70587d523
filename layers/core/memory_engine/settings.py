"""The settings models, read from the environment (names in :mod:`memory_engine.constants`): the
engine's :class:`Settings` and the clients' :class:`ClientSettings`. No other module reads it."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memory_engine import constants as c


class EmbeddingProvider(str, Enum):
    LOCAL = "local"
    BEDROCK = "bedrock"
    OPENAI = "openai"


class ChatProvider(str, Enum):
    NONE = "none"
    BEDROCK = "bedrock"
    OPENAI = "openai"


class Runtime(str, Enum):
    LOCAL = "local"
    AWS = "aws"


class OcrProvider(str, Enum):
    """The engine of the built-in ``ocr`` converter; ``auto``: Textract on AWS, else Tesseract when installed."""

    AUTO = "auto"
    TESSERACT = "tesseract"
    TEXTRACT = "textract"
    NONE = "none"


#: How long an authenticated key is cached per process, by runtime: revoking a key takes effect
#: within this many seconds (locally `keys revoke` runs in another process than the server).
KEY_CACHE_DEFAULTS: dict[Runtime, float] = {Runtime.LOCAL: 5.0, Runtime.AWS: 30.0}

#: Each provider's default model and dimension.
EMBEDDING_DEFAULTS: dict[EmbeddingProvider, tuple[str, int]] = {
    EmbeddingProvider.LOCAL: ("all-MiniLM-L6-v2-int8", 384),
    EmbeddingProvider.BEDROCK: ("amazon.titan-embed-text-v2:0", 1024),
    EmbeddingProvider.OPENAI: ("nomic-embed-text", 768),
}
CHAT_DEFAULTS: dict[ChatProvider, str] = {
    ChatProvider.NONE: "",
    ChatProvider.BEDROCK: "anthropic.claude-3-5-haiku-20241022-v1:0",
    ChatProvider.OPENAI: "llama3.1",
}


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


#: What each Lambda function needs on AWS besides a database, as environment variable names (the CDK
#: app sets them; a test compares the two). Checked at the function's cold start.
AWS_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    c.FUNCTION_API: (c.ENV_DOCUMENTS_BUCKET, c.ENV_STATE_MACHINE_ARN, c.ENV_EVENT_BUS_NAME),
    c.FUNCTION_SEARCH: (),
    c.FUNCTION_INGESTION: (c.ENV_DOCUMENTS_BUCKET,),
    c.FUNCTION_EXTRACTION: (c.ENV_EVENT_BUS_NAME,),
    c.FUNCTION_EXPIRY: (),
}


class Settings(BaseSettings):
    """Deployment settings. Built once by the composition root, never at import time."""

    model_config = SettingsConfigDict(extra="ignore")

    home: Path = Field(Path(".memory-engine"), validation_alias=_env(c.ENV_HOME))
    database_url: str | None = Field(None, validation_alias=_env(c.ENV_DATABASE_URL))
    database_secret_arn: str | None = Field(None, validation_alias=_env(c.ENV_DATABASE_SECRET_ARN))
    database_iam_auth: bool = Field(False, validation_alias=_env(c.ENV_DATABASE_IAM_AUTH))
    runtime: Runtime = Field(Runtime.LOCAL, validation_alias=_env(c.ENV_RUNTIME))

    embedding_provider: EmbeddingProvider = Field(
        EmbeddingProvider.LOCAL, validation_alias=_env(c.ENV_EMBEDDING_PROVIDER)
    )
    embedding_model: str | None = Field(None, validation_alias=_env(c.ENV_EMBEDDING_MODEL))
    embedding_dimensions: int | None = Field(
        None, ge=1, le=16000, validation_alias=_env(c.ENV_EMBEDDING_DIMENSIONS)
    )

    chat_provider: ChatProvider = Field(ChatProvider.NONE, validation_alias=_env(c.ENV_CHAT_PROVIDER))
    chat_model: str | None = Field(None, validation_alias=_env(c.ENV_CHAT_MODEL))
    openai_base_url: str | None = Field(None, validation_alias=_env(c.ENV_OPENAI_BASE_URL))
    openai_api_key: str | None = Field(None, validation_alias=_env(c.ENV_OPENAI_API_KEY))
    aws_region: str | None = Field(None, validation_alias=AliasChoices(c.ENV_AWS_REGION, "AWS_DEFAULT_REGION"))

    documents_bucket: str | None = Field(None, validation_alias=_env(c.ENV_DOCUMENTS_BUCKET))
    event_bus_name: str | None = Field(None, validation_alias=_env(c.ENV_EVENT_BUS_NAME))
    state_machine_arn: str | None = Field(None, validation_alias=_env(c.ENV_STATE_MACHINE_ARN))
    ingest_workers: int | None = Field(None, ge=1, le=64, validation_alias=_env(c.ENV_INGEST_WORKERS))
    foreground_wait_ms: int = Field(0, ge=0, le=5000, validation_alias=_env(c.ENV_FOREGROUND_WAIT_MS))
    ingest_yield_cores: bool = Field(True, validation_alias=_env(c.ENV_INGEST_YIELD_CORES))
    express_state_machine_arn: str | None = Field(None, validation_alias=_env(c.ENV_EXPRESS_STATE_MACHINE_ARN))
    extraction_dlq_url: str | None = Field(None, validation_alias=_env(c.ENV_EXTRACTION_DLQ_URL))
    extraction_queue_url: str | None = Field(None, validation_alias=_env(c.ENV_EXTRACTION_QUEUE_URL))
    functions_dir: Path | None = Field(None, validation_alias=_env(c.ENV_FUNCTIONS_DIR))
    key_cache_seconds: float | None = Field(None, ge=0, le=3600, validation_alias=_env(c.ENV_KEY_CACHE_SECONDS))
    search_connections: int | None = Field(None, ge=1, le=64, validation_alias=_env(c.ENV_SEARCH_CONNECTIONS))
    ocr_engine: OcrProvider = Field(OcrProvider.AUTO, validation_alias=_env(c.ENV_OCR_ENGINE))
    ocr_languages: str = Field("eng", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$", validation_alias=_env(c.ENV_OCR_LANGUAGES))
    public_url: str | None = Field(None, validation_alias=_env(c.ENV_PUBLIC_URL))
    #: at most 115 minutes: the Standard state machine's execution ends after 2 hours
    converter_deadline_seconds: int = Field(3600, ge=1, le=6900, validation_alias=_env(c.ENV_CONVERTER_DEADLINE_SECONDS))
    callback_secret_arn: str | None = Field(None, validation_alias=_env(c.ENV_CALLBACK_SECRET_ARN))
    #: comma-separated `host` / `host:port` a converter may name although not public (domain/outbound.py)
    converter_allowed_hosts: str = Field("", validation_alias=_env(c.ENV_CONVERTER_ALLOWED_HOSTS))

    @field_validator("converter_allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, value: str) -> str:
        from memory_engine.domain.outbound import OutboundPolicy

        OutboundPolicy.parse_allowed(value)  # raises ValueError naming the bad entry
        return value

    @field_validator("embedding_provider", "chat_provider", "runtime", "ocr_engine", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    def missing_for(self, function: str) -> list[str]:
        """The environment variables ``function`` (a ``constants.FUNCTION_*`` name) needs and lacks: a
        database everywhere, the model endpoint of an ``openai`` provider, and on AWS its
        :data:`AWS_REQUIREMENTS`."""
        missing: list[str] = []
        if not (self.database_url or self.database_secret_arn):
            missing.append(f"{c.ENV_DATABASE_URL} (or {c.ENV_DATABASE_SECRET_ARN})")
        openai = self.embedding_provider is EmbeddingProvider.OPENAI or self.chat_provider is ChatProvider.OPENAI
        if openai and not self.openai_base_url:
            missing.append(c.ENV_OPENAI_BASE_URL)
        if self.runtime is Runtime.AWS:
            values = self._by_env_name()
            missing.extend(name for name in AWS_REQUIREMENTS[function] if not values.get(name))
        return missing

    def _by_env_name(self) -> dict[str, object]:
        values: dict[str, object] = {}
        for name, info in type(self).model_fields.items():
            if isinstance(info.validation_alias, AliasChoices):
                values.update({str(choice): getattr(self, name) for choice in info.validation_alias.choices})
        return values

    @property
    def resolved_key_cache_seconds(self) -> float:
        """The authenticator's cache TTL: the setting, else 5 s locally and 30 s on AWS."""
        return self.key_cache_seconds if self.key_cache_seconds is not None else KEY_CACHE_DEFAULTS[self.runtime]

    @property
    def resolved_search_connections(self) -> int:
        """Connections search uses at once with ``DATABASE_URL``: the setting, else the cores (at least
        two). Its statements are CPU work on a cached data set, so more server processes than cores
        only take turns: at 100k facts + 100k chunks on two cores, a search's five statements over
        its own two connections ran hybrid p50 / p95 17.9 / 23.6 ms against 20.5 / 26.6 ms over
        five of a shared pool (interleaved in one process, 600 searches each, docs/retrieval.md)."""
        return self.search_connections or max(2, os.cpu_count() or 1)

    @property
    def resolved_embedding_model(self) -> str:
        return self.embedding_model or EMBEDDING_DEFAULTS[self.embedding_provider][0]

    @property
    def resolved_embedding_dimensions(self) -> int:
        return self.embedding_dimensions or EMBEDDING_DEFAULTS[self.embedding_provider][1]

    @property
    def resolved_ingest_workers(self) -> int:
        """Local ingestion runs in flight at once: enough to overlap file and database work with the
        model on every core, few enough that a run's memory stays small (2x the cores, 2..8)."""
        return self.ingest_workers or max(2, min(8, 2 * (os.cpu_count() or 1)))

    @property
    def resolved_chat_model(self) -> str:
        return self.chat_model or CHAT_DEFAULTS[self.chat_provider]

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def drop_dir(self) -> Path:
        return self.home / "drop"


#: Where `memory-engine dev` listens by default.
DEFAULT_CLIENT_URL = "http://127.0.0.1:8787"


class ClientSettings(BaseSettings):
    """What the engine's clients (`memory-engine mcp`, `events send`) read: the engine's URL and key."""

    model_config = SettingsConfigDict(extra="ignore")

    url: str = Field(DEFAULT_CLIENT_URL, validation_alias=_env(c.ENV_CLIENT_URL))
    api_key: str | None = Field(None, validation_alias=_env(c.ENV_CLIENT_API_KEY))
