"""The document-ingestion half of the composition root: :class:`memory_engine.bootstrap.Container`
inherits these providers (blob store, extractors and converters, OCR, callback URLs, the outbound
guard, the pipeline starter). Lazily built, once per process, typed by their ports, as there."""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import TYPE_CHECKING, Any

from memory_engine.errors import ConfigurationError, DependencyError
from memory_engine.ports.embedder import Embedder
from memory_engine.settings import DEFAULT_CLIENT_URL, OcrProvider, Runtime, Settings

if TYPE_CHECKING:
    from boto3.session import Session

    from memory_engine.adapters.postgres.database import Database
    from memory_engine.domain.converter_protocol import CallbackUrls
    from memory_engine.ports.blobs import BlobStore, UploadInbox
    from memory_engine.ports.conversions import ConversionRepository, TaskCallbacks
    from memory_engine.ports.documents import DocumentRepository
    from memory_engine.ports.events import EventPublisher
    from memory_engine.ports.ingestion_rules import IngestionRuleRepository
    from memory_engine.ports.ocr import OcrEngine
    from memory_engine.ports.outbound import OutboundGuard
    from memory_engine.ports.pipeline import PipelineStarter
    from memory_engine.ports.projects import ProjectRepository
    from memory_engine.services.ingestion.steps import IngestionPorts

#: The file under ``$MEMORY_ENGINE_HOME`` holding the converter-callback HMAC secret (local shape).
CALLBACK_SECRET_FILE = "converter-callback.key"


class OnDatabase(cached_property[Any]):
    """The provider of a PostgreSQL adapter that needs nothing but a pool: ``adapter``
    (``"module:Class"``, under ``memory_engine.adapters.postgres``) built on the container's ``pool``
    the first time it is asked for, and imported only then, so a function loads the adapters it
    uses (cold start). Declared with its port, ``memories: cached_property[MemoryRepository] =
    OnDatabase("memories:PostgresMemoryRepository")``. mypy sees the port, not the adapter:
    tests/unit/local/test_container.py builds each and checks it against its port, and the
    import-graph test (tests/unit/test_architecture.py) reads the module it names."""

    PACKAGE = "memory_engine.adapters.postgres"

    def __init__(self, adapter: str, *, pool: str = "database") -> None:
        self.adapter, self.pool = adapter, pool
        super().__init__(self._build)
        self.__doc__ = f"``{self.PACKAGE}.{adapter.replace(':', '.')}`` on the container's ``{pool}``."

    def adapter_class(self) -> type[Any]:
        module, name = self.adapter.split(":")
        return getattr(importlib.import_module(f"{self.PACKAGE}.{module}"), name)  # type: ignore[no-any-return]

    def _build(self, container: Any) -> Any:
        return self.adapter_class()(getattr(container, self.pool))


class IngestionProviders:
    """Providers of document ingestion; the rest of the container (settings, database, the models,
    AWS clients, events) comes from :class:`memory_engine.bootstrap.Container`."""

    settings: Settings

    if TYPE_CHECKING:  # provided by Container
        @property
        def database(self) -> Database: ...
        @property
        def embedder(self) -> Embedder: ...
        @property
        def projects(self) -> ProjectRepository: ...
        @property
        def event_publisher(self) -> EventPublisher: ...
        @property
        def aws(self) -> Session: ...

    documents: cached_property[DocumentRepository] = OnDatabase("documents:PostgresDocumentRepository")

    @cached_property
    def blob_store(self) -> BlobStore:
        """The documents bucket on AWS (DOCUMENTS_BUCKET); $MEMORY_ENGINE_HOME/blobs locally."""
        if self.settings.runtime is Runtime.AWS or self.settings.documents_bucket:
            from memory_engine.adapters.s3.blob_store import S3BlobStore

            if not self.settings.documents_bucket:
                raise ConfigurationError("DOCUMENTS_BUCKET is not set")
            return S3BlobStore(self.aws.client("s3"), self.settings.documents_bucket)
        from memory_engine.local.adapters.blob_store import LocalBlobStore

        return LocalBlobStore(self.settings.home / "blobs")

    @cached_property
    def upload_inbox(self) -> UploadInbox | None:
        """Where PUTs to upload URLs this server issued land: none here (on AWS they go to S3's
        presigned URLs); the local runtime has one."""
        return None

    @cached_property
    def ingestion_embedder(self) -> Embedder:
        """The embedder of the ingestion steps. With the local model: its own session computing in
        the calling thread only (one core per ingestion worker), so the workers' lowered priority
        covers the model's work too, and concurrent runs use every core (measured: 1-thread sessions
        in parallel embed as fast or faster than one 2-thread session, docs/ingestion.md)."""
        if self.settings.runtime is Runtime.AWS:  # the local model and its package are not deployed
            return self.embedder
        from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

        if type(self.embedder) is OnnxMiniLMEmbedder:
            return OnnxMiniLMEmbedder(threads=1, query_cache_size=0, memory_arena=True)
        return self.embedder

    @cached_property
    def ocr_engine(self) -> OcrEngine | None:
        """The built-in ``ocr`` converter (``OCR_ENGINE``): Textract on AWS, Tesseract locally when
        its binary is installed, else None."""
        from memory_engine.adapters.ocr.tesseract import TesseractOcr

        s = self.settings
        provider = s.ocr_engine
        if provider is OcrProvider.AUTO:
            if s.runtime is Runtime.AWS:
                provider = OcrProvider.TEXTRACT
            else:
                provider = OcrProvider.TESSERACT if TesseractOcr.available() else OcrProvider.NONE
        if provider is OcrProvider.TEXTRACT:
            from memory_engine.adapters.ocr.textract import TextractOcr

            if not s.documents_bucket:
                raise ConfigurationError("OCR_ENGINE=textract needs DOCUMENTS_BUCKET (Textract reads multi-page files from S3)")
            return TextractOcr(self.aws.client("textract"), self.aws.client("s3"), s.documents_bucket)
        if provider is OcrProvider.TESSERACT:
            return TesseractOcr(languages=s.ocr_languages)
        return None

    ingestion_rules: cached_property[IngestionRuleRepository] = OnDatabase("ingestion_rules:PostgresIngestionRuleRepository")
    conversions: cached_property[ConversionRepository] = OnDatabase("conversions:PostgresConversionRepository")

    @cached_property
    def callback_urls(self) -> CallbackUrls:
        """Signs converter callback URLs: the secret from Secrets Manager
        (CONVERTER_CALLBACK_SECRET_ARN) on AWS, a file under $MEMORY_ENGINE_HOME locally; the public
        origin from MEMORY_ENGINE_PUBLIC_URL (locally the engine sets its own address once it listens)."""
        from memory_engine.domain.converter_protocol import CallbackUrls

        s = self.settings

        def secret() -> bytes:
            if s.callback_secret_arn:
                try:
                    value = self.aws.client("secretsmanager").get_secret_value(SecretId=s.callback_secret_arn)
                except Exception as exc:  # botocore's errors: the callback signer is a dependency
                    raise DependencyError(f"the converter callback secret cannot be read: {exc}") from exc
                return str(value["SecretString"]).encode()
            if s.runtime is Runtime.AWS:
                raise ConfigurationError("CONVERTER_CALLBACK_SECRET_ARN is not set: converter callbacks cannot be signed")
            from memory_engine.local.adapters.files import read_or_create_secret

            return read_or_create_secret(s.home / CALLBACK_SECRET_FILE)

        return CallbackUrls(secret, s.public_url or DEFAULT_CLIENT_URL, s.converter_deadline_seconds)

    @cached_property
    def outbound_guard(self) -> OutboundGuard:
        """Checks every URL the engine calls on a tenant's behalf (HOUSE_STYLE rule 19): public
        addresses only, unless CONVERTER_ALLOWED_HOSTS allows the host; never the engine's own origin."""
        from memory_engine.adapters.outbound.guard import ResolvingOutboundGuard

        def own_origins() -> list[str]:
            return [url for url in (self.settings.public_url, self.callback_urls.base_url) if url]

        return ResolvingOutboundGuard(self.settings.converter_allowed_hosts, own_origins=own_origins)

    @cached_property
    def task_callbacks(self) -> TaskCallbacks:
        """Resumes a run waiting for a converter's callback: Step Functions on AWS."""
        from memory_engine.adapters.stepfunctions.task_tokens import StepFunctionsTaskCallbacks

        return StepFunctionsTaskCallbacks(self.aws.client("stepfunctions"))

    @cached_property
    def ingestion_ports(self) -> IngestionPorts:
        from memory_engine.adapters.extractors import native_extractors
        from memory_engine.adapters.extractors.http_converter import HttpConverter
        from memory_engine.services.ingestion.steps import IngestionPorts

        return IngestionPorts(
            documents=self.documents, blobs=self.blob_store, embedder=self.ingestion_embedder, projects=self.projects,
            extractors=native_extractors(), converter=HttpConverter(self.outbound_guard), ocr=self.ocr_engine,
            conversions=self.conversions,
            callback_urls=self.callback_urls, task_callbacks=self.task_callbacks,
            events=self.event_publisher,
        )

    @cached_property
    def pipeline_starter(self) -> PipelineStarter:
        """Step Functions (INGESTION_STATE_MACHINE_ARN); the local runtime runs the pipeline itself."""
        if not self.settings.state_machine_arn:
            raise ConfigurationError("INGESTION_STATE_MACHINE_ARN is not set")
        from memory_engine.adapters.stepfunctions.starter import StepFunctionsPipelineStarter

        return StepFunctionsPipelineStarter(self.aws.client("stepfunctions"), self.settings.state_machine_arn,
                                            self.settings.express_state_machine_arn)
