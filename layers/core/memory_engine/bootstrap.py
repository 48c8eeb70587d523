"""The composition root: builds every adapter lazily, once per process (cold start).

Nothing here runs at import time. Entry points call :func:`get_container`; tests build a
:class:`Container` with real local pieces (or fakes that subclass the ports) and install it
with :func:`set_container`. Each provider is typed with the port it implements, so callers see
the contract, not the adapter. The local runtime extends this with its own stand-ins
(``memory_engine.local.container.LocalContainer``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from memory_engine.adapters.postgres.database import Database
from memory_engine.bootstrap_ingestion import IngestionProviders, OnDatabase
from memory_engine.errors import ConfigurationError
from memory_engine.ports.chat import ChatModel, NoChatModel
from memory_engine.ports.embedder import Embedder
from memory_engine.settings import ChatProvider, EmbeddingProvider, Runtime, Settings

if TYPE_CHECKING:
    from boto3.session import Session

    from memory_engine.ports.entries import EntryRepository, MemoryRepository
    from memory_engine.ports.episodes import EpisodeRepository
    from memory_engine.ports.events import DeadLetterSink, EventPublisher, EventQueue
    from memory_engine.ports.extraction_runs import ExtractionRunRepository
    from memory_engine.ports.lifecycle import ExpiryRepository, ImportRepository, LifecycleRepository
    from memory_engine.ports.projects import ProjectRepository
    from memory_engine.ports.search import KnowledgeIndex
    from memory_engine.services.extract_turn import ExtractionDeps
    from memory_engine.services.keys import Authenticator


#: Attempts per AWS call (the first and two retries), botocore's ``standard`` mode: a Step Functions
#: task that still fails is retried by the state machine's own ``Retry`` (domain/pipeline.py), so the
#: two layers multiply to at most 3 x that policy's attempts, not botocore's legacy 5 x it.
AWS_MAX_ATTEMPTS = 3


class Container(IngestionProviders):
    """Holds the adapters of one process. Pass overrides for anything tests replace."""

    #: The local engine's worker pool, when one serves the requests: () -> (alive, configured).
    worker_counts: Callable[[], tuple[int, int]] | None = None

    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        self.settings = settings or Settings()
        self._checked: set[str] = set()
        unknown = sorted(name for name in overrides if not isinstance(getattr(type(self), name, None), cached_property))
        if unknown:
            # a misspelt override would otherwise be stored beside the real provider and never used
            raise TypeError(f"{type(self).__name__} has no provider named {', '.join(map(repr, unknown))}")
        for name, value in overrides.items():
            self.__dict__[name] = value  # pre-fills the cached_property of that name

    def check(self, function: str) -> None:
        """Raise ConfigurationError naming every setting ``function`` (``constants.FUNCTION_*``) lacks.
        Each Lambda handler calls this first, so a misconfigured function fails at its cold start
        rather than on the first request that needs the missing piece. Cheap once passed."""
        if function in self._checked:
            return
        missing = self.settings.missing_for(function)
        if missing:
            raise ConfigurationError(f"the {function} function is not configured: set {', '.join(missing)}")
        self._checked.add(function)

    # --- AWS clients (built only when a Bedrock/S3/EventBridge adapter needs one) ---
    @cached_property
    def aws(self) -> Session:
        """Where every AWS client comes from, ``self.aws.client("sqs")`` (typed per service by
        boto3-stubs): the settings' region and botocore's ``standard`` retry mode (throttling and
        transient errors, exponential backoff, :data:`AWS_MAX_ATTEMPTS` attempts in all). botocore
        owns retries of a single AWS call; the adapters add none of their own (docs/security.md,
        "Retries")."""
        import boto3
        import botocore.session
        from botocore.config import Config

        core = botocore.session.get_session()
        core.set_default_client_config(Config(retries={"mode": "standard", "total_max_attempts": AWS_MAX_ATTEMPTS}))
        return boto3.Session(botocore_session=core, region_name=self.settings.aws_region)

    @cached_property
    def database(self) -> Database:
        s = self.settings
        if s.database_url:
            return Database(s.database_url)
        if s.database_secret_arn:
            from memory_engine.adapters.postgres.aws_conninfo import AwsConninfo

            factory = AwsConninfo(
                self.aws.client("secretsmanager"), self.aws.client("rds"), s.database_secret_arn,
                iam_auth=s.database_iam_auth,
            )
            return Database(factory, max_size=2)
        raise ConfigurationError(
            "no database configured: set DATABASE_URL, or run `memory-engine dev` for the embedded one"
        )

    @cached_property
    def embedder(self) -> Embedder:
        s = self.settings
        provider = s.embedding_provider
        if provider is EmbeddingProvider.LOCAL:
            from memory_engine.local.adapters.onnx_embedder import DIMENSIONS, OnnxMiniLMEmbedder

            if s.embedding_dimensions not in (None, DIMENSIONS):
                raise ConfigurationError(
                    f"the local model produces {DIMENSIONS}-d vectors; unset EMBEDDING_DIMENSIONS or set it to {DIMENSIONS}"
                )
            return OnnxMiniLMEmbedder()
        if provider is EmbeddingProvider.BEDROCK:
            from memory_engine.adapters.bedrock.embedder import BedrockTitanEmbedder

            return BedrockTitanEmbedder(
                self.aws.client("bedrock-runtime"),
                model_id=s.resolved_embedding_model,
                dimensions=s.resolved_embedding_dimensions,
            )
        from memory_engine.adapters.openai_compat.embedder import OpenAICompatEmbedder

        if not s.openai_base_url:
            raise ConfigurationError("EMBEDDING_PROVIDER=openai needs OPENAI_BASE_URL")
        return OpenAICompatEmbedder(
            s.openai_base_url, model_id=s.resolved_embedding_model,
            dimensions=s.resolved_embedding_dimensions, api_key=s.openai_api_key,
        )

    @cached_property
    def chat_model(self) -> ChatModel:
        s = self.settings
        if s.chat_provider is ChatProvider.NONE:
            return NoChatModel()
        if s.chat_provider is ChatProvider.BEDROCK:
            from memory_engine.adapters.bedrock.chat import BedrockConverseChat

            return BedrockConverseChat(self.aws.client("bedrock-runtime"), model_id=s.resolved_chat_model)
        from memory_engine.adapters.openai_compat.chat import OpenAICompatChat

        if not s.openai_base_url:
            raise ConfigurationError("CHAT_PROVIDER=openai needs OPENAI_BASE_URL")
        return OpenAICompatChat(s.openai_base_url, model_id=s.resolved_chat_model, api_key=s.openai_api_key)

    projects: cached_property[ProjectRepository] = OnDatabase("projects:PostgresProjectRepository")

    @cached_property
    def authenticator(self) -> Authenticator:
        from memory_engine.services.keys import Authenticator

        return Authenticator(self.projects, ttl_seconds=self.settings.resolved_key_cache_seconds)

    # --- memories and the write funnel ---
    memories: cached_property[MemoryRepository] = OnDatabase("memories:PostgresMemoryRepository")
    #: Memory entries, their entities, and the write funnel's locked transaction.
    entries: cached_property[EntryRepository] = OnDatabase("entries:PostgresEntryRepository")

    # --- knowledge search ---
    @cached_property
    def search_database(self) -> Database:
        """Search's own pool of ``resolved_search_connections`` with ``DATABASE_URL`` (its parallel
        statements then run on as many server processes as there are cores, not on every connection
        of the shared pool in turn); on AWS the function's pool of two."""
        s = self.settings
        if s.database_url:
            return Database(s.database_url, max_size=s.resolved_search_connections)
        return self.database

    knowledge_index: cached_property[KnowledgeIndex] = OnDatabase("search:PostgresKnowledgeIndex", pool="search_database")

    # --- fact extraction ---
    episodes: cached_property[EpisodeRepository] = OnDatabase("episodes:PostgresEpisodeRepository")
    extraction_runs: cached_property[ExtractionRunRepository] = OnDatabase("extraction_runs:PostgresExtractionRunRepository")

    @cached_property
    def event_publisher(self) -> EventPublisher:
        """EventBridge when ``EVENT_BUS_NAME`` is set; else on AWS a publisher that refuses (a function the
        stack gives no bus never publishes), locally a recorder that logs."""
        if self.settings.event_bus_name:
            from memory_engine.adapters.eventbridge.publisher import EventBridgePublisher

            return EventBridgePublisher(self.aws.client("events"), bus_name=self.settings.event_bus_name)
        if self.settings.runtime is Runtime.AWS:  # only the steps that publish are given the bus
            from memory_engine.ports.events import NoEventBus

            return NoEventBus()
        from memory_engine.local.adapters.event_sinks import RecordingPublisher

        return RecordingPublisher()

    @cached_property
    def dead_letters(self) -> DeadLetterSink | None:
        """The extraction DLQ when ``EXTRACTION_DLQ_URL`` is set; locally a list in memory;
        ``None`` on AWS without the URL (the consumer then leaves rejected events to SQS's redrive)."""
        if self.settings.extraction_dlq_url:
            from memory_engine.adapters.sqs.dead_letters import SqsDeadLetterSink

            return SqsDeadLetterSink(self.aws.client("sqs"), queue_url=self.settings.extraction_dlq_url)
        if self.settings.runtime is Runtime.AWS:
            return None
        from memory_engine.local.adapters.event_sinks import LocalDeadLetters

        return LocalDeadLetters()

    @cached_property
    def extraction(self) -> ExtractionDeps:
        """The dependencies of ``services.extract_turn``."""
        from memory_engine.services.extract_turn import ExtractionDeps

        return ExtractionDeps(
            episodes=self.episodes, runs=self.extraction_runs, entries=self.entries, embedder=self.embedder,
            chat=self.chat_model, publisher=self.event_publisher,
        )

    @cached_property
    def event_queue(self) -> EventQueue:
        """Where turn events are queued for the extraction consumer: on AWS the extraction SQS queue
        (``EXTRACTION_QUEUE_URL``; ``POST /v1/memories/{id}/turns`` with ``extract``; producers of
        ``turn.completed`` events put them on the bus, whose rule feeds the same queue), locally the
        local runtime's in-process queue (which ``POST /v1/events`` also uses)."""
        if not self.settings.extraction_queue_url:
            raise ConfigurationError("EXTRACTION_QUEUE_URL is not set: turns cannot be queued for extraction")
        from memory_engine.adapters.sqs.event_queue import SqsEventQueue

        return SqsEventQueue(self.aws.client("sqs"), queue_url=self.settings.extraction_queue_url)

    # --- memory lifecycle ---
    expiry: cached_property[ExpiryRepository] = OnDatabase("expiry:PostgresExpiry")
    #: Forget, purge, and the reads of an export.
    lifecycle: cached_property[LifecycleRepository] = OnDatabase("lifecycle:PostgresLifecycle")
    importer: cached_property[ImportRepository] = OnDatabase("imports:PostgresImporter")

    def close(self) -> None:
        for name in ("search_database", "database"):
            if name in self.__dict__:
                self.__dict__[name].close()


def install_schema(conninfo: str, *, embedding_dim: int, app: tuple[str, str], search: tuple[str, str]) -> list[str]:
    """Apply pending migrations as the admin ``conninfo``, then create or update the login roles: ``app``
    (user, password) reads and writes, ``search`` only reads. Returns the migrations applied (the
    deploy-time custom resource, ``functions/migrations``). Raises ``SchemaMismatch`` and ``psycopg.Error``."""
    from memory_engine.adapters.postgres.migrations import migrate
    from memory_engine.adapters.postgres.roles import LoginRole, RoleAccess, ensure_roles

    applied = migrate(conninfo, embedding_dim=embedding_dim)
    ensure_roles(conninfo, [LoginRole(*app, RoleAccess.READ_WRITE), LoginRole(*search, RoleAccess.READ_ONLY)])
    return applied




_installed: Container | None = None


@functools.cache
def _default_container() -> Container:
    return Container()


def get_container() -> Container:
    return _installed if _installed is not None else _default_container()


def set_container(container: Container | None) -> None:
    """Install a container for this process (dev server, tests); ``None`` restores the default."""
    global _installed
    _installed = container
