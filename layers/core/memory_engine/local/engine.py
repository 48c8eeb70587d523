"""The local engine: embedded (or external) PostgreSQL, migrations, the HTTP gateway and the
background services, started and stopped as one unit by `memory-engine dev`."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from memory_engine import constants as c
from memory_engine.adapters.postgres.database import Database
from memory_engine.adapters.postgres.migrations import migrate
from memory_engine.bootstrap import set_container
from memory_engine.domain.auth import Scope
from memory_engine.local.adapters.embedded_postgres import EmbeddedPostgres
from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder
from memory_engine.local.background import BackgroundService, background_services
from memory_engine.local.children import ChildRecord
from memory_engine.local.container import LocalContainer
from memory_engine.local.http_gateway import LocalGateway
from memory_engine.local.ingestion_process import IngestionProcess
from memory_engine.local.priority import CoreYield, ForegroundGate, GatedEmbedder, lower_backend_priority
from memory_engine.local.worker_process import ForwardingPipelineStarter
from memory_engine.local.workers import WorkerPool, default_workers
from memory_engine.services.keys import create_api_key
from memory_engine.settings import EmbeddingProvider, Settings

logger = logging.getLogger(__name__)

LOCAL_DATABASE = "memory_engine"
#: The interpreter's thread switch interval while this process serves the front door (default 5 ms).
FRONT_DOOR_SWITCH_INTERVAL_S = 0.0005


def _ensure_database(server_uri: str, name: str) -> None:
    with psycopg.connect(server_uri, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


@dataclass
class LocalDatabase:
    """A database URL, plus the embedded server behind it when there is one."""

    url: str
    embedded: EmbeddedPostgres | None = None

    def stop(self) -> None:
        if self.embedded is not None:
            self.embedded.stop()


def open_database(settings: Settings) -> LocalDatabase:
    """`DATABASE_URL` when set, else the embedded server under $MEMORY_ENGINE_HOME (started or attached)."""
    if settings.database_url:
        return LocalDatabase(settings.database_url)
    embedded = EmbeddedPostgres(settings.pgdata)
    try:
        server_uri = embedded.start()
        _ensure_database(server_uri, LOCAL_DATABASE)
        return LocalDatabase(embedded.uri(LOCAL_DATABASE), embedded)
    except BaseException:
        embedded.stop()
        raise


@dataclass
class LocalEngine:
    settings: Settings
    host: str = "127.0.0.1"
    port: int = 8787
    #: Worker processes serving requests (None: :func:`default_workers`; 0: serve in this process).
    workers: int | None = None
    database: LocalDatabase | None = None
    container: LocalContainer | None = None
    gateway: LocalGateway | None = None
    pool: WorkerPool | None = None
    #: The ingestion runner's own process (with worker processes and the local runner).
    ingestion: IngestionProcess | None = None
    services: list[BackgroundService] = field(default_factory=list)
    admin_key: str | None = None
    #: The processes this engine spawned, so the next start ends any left by a killed engine.
    children: ChildRecord | None = None

    def start(self) -> str:
        """Start everything; returns the base URL. On failure, stops what it started and re-raises."""
        try:
            self.settings.home.mkdir(parents=True, exist_ok=True)
            self.settings.drop_dir.mkdir(parents=True, exist_ok=True)
            self.children = ChildRecord(self.settings.home)
            self.children.reap_leftovers()  # a killed engine's ingestion process or workers
            self.database = open_database(self.settings)
            settings = self.settings.model_copy(update={"database_url": self.database.url})
            workers = default_workers() if self.workers is None else self.workers
            overrides: dict[str, Any] = {}
            wait_s = settings.foreground_wait_ms / 1000
            gate = ForegroundGate(max_wait_s=wait_s) if workers > 0 and wait_s > 0 else None
            embedded = self.database.embedded is not None
            if workers > 0 and gate is None and not settings.state_machine_arn:
                # Ingestion runs in a process of its own, so its threads never hold the GIL this
                # process's request threads wait for (local/ingestion_process.py).
                self.ingestion = IngestionProcess(settings, lower_backends=embedded, on_spawn=self.children.add)
                overrides["pipeline_starter"] = ForwardingPipelineStarter(self.ingestion.starts)
                if settings.ingest_yield_cores and CoreYield.supported():
                    # while a request is served, ingestion runs on half the cores (local/priority.py)
                    cores = CoreYield(lambda: self.ingestion.pid if self.ingestion else None)
                    gate = ForegroundGate(0.0, on_busy=cores.narrow, on_quiet=cores.widen)
            elif workers > 0 and embedded:
                # Worker processes serve the API; this process's own connections do background work
                # (ingestion, extraction, the drop folder), so their backends yield the cores to searches.
                overrides["database"] = Database(self.database.url, on_connect=lower_backend_priority)
            if gate is not None and wait_s > 0 and settings.embedding_provider is EmbeddingProvider.LOCAL:
                # the local model's ingestion calls wait for a quiet moment while requests are served
                session = OnnxMiniLMEmbedder(threads=1, query_cache_size=0, memory_arena=True)
                overrides["ingestion_embedder"] = GatedEmbedder(session, gate)
            self.container = LocalContainer(settings, dead_letter_folder=self.settings.home / "dead-letters",
                                            **overrides)
            embedder = self.container.embedder
            migrate(self.database.url, embedding_dim=embedder.dimensions)
            self._ensure_default_project()
            set_container(self.container)
            embedder.embed_query("warm up")
            if self.ingestion is not None:
                self.ingestion.start(wait=False)  # it resumes interrupted runs itself; ready below
            for service in background_services(self.container):
                service.start()
                self.services.append(service)
            if self.ingestion is None:
                self._resume_interrupted_ingestion()
            if workers > 0:
                # This process now runs the HTTP front door beside its background threads (the drop
                # folder, extraction; ingestion too when it runs here). A request's front thread needs
                # the GIL a few times; Python hands it over every 5 ms by default, which a draining
                # corpus turned into most of a health check's latency.
                sys.setswitchinterval(FRONT_DOOR_SWITCH_INTERVAL_S)
                self.pool = WorkerPool(settings, workers, starts=self.ingestion.starts if self.ingestion else None,
                                       on_spawn=self.children.add)
                self.pool.start()
                self.container.worker_counts = self.pool.counts  # GET /v1/health reports the pool
                if self.ingestion is None:
                    starter = self.container.pipeline_starter
                    self.pool.relay_pipeline_starts(lambda payload, run_id: starter.start(payload, name=run_id))
            if self.ingestion is not None:
                self.ingestion.wait_ready()
            self.gateway = LocalGateway(self.host, self.port, pool=self.pool, gate=gate)
            self.gateway.start()
            if not settings.public_url:  # converter callback and download URLs point at this engine
                self.container.callback_urls.base_url = self.gateway.base_url
                if self.ingestion is not None:
                    self.ingestion.set_public_url(self.gateway.base_url)
            return self.gateway.base_url
        except BaseException:
            self.stop()
            raise

    def _ensure_default_project(self) -> None:
        assert self.container is not None
        repo = self.container.projects
        project = repo.get_or_create_project(c.DEFAULT_PROJECT)
        if not repo.list_keys(project.id):
            minted = create_api_key(
                repo, project_name=c.DEFAULT_PROJECT, scopes=frozenset({Scope.ADMIN}), name="admin (first start)"
            )
            self.admin_key = minted.raw_key

    def _resume_interrupted_ingestion(self) -> None:
        from memory_engine.services.ingestion.documents import resume_interrupted

        assert self.container is not None
        resumed = resume_interrupted(self.container.ingestion_ports, self.container.pipeline_starter)
        for doc in resumed:
            logger.info("resuming the interrupted ingestion of %s (%s)", doc.path, doc.id)

    def stop(self) -> None:
        """Stop what started, in reverse order; safe to call twice or after a failed start."""
        self._release("gateway", "stop")
        self._release("pool", "stop")
        self._release("ingestion", "stop")
        self._release("children", "clear")
        while self.services:
            service = self.services.pop()
            try:
                service.stop()
            except Exception:
                logger.exception("stopping %s failed", getattr(service, "name", service))
        set_container(None)
        self._release("container", "close")
        self._release("database", "stop")

    def _release(self, part: str, method: str) -> None:
        """Call ``method`` on the attribute ``part`` when it is set, then unset it."""
        held = getattr(self, part)
        if held is not None:
            getattr(held, method)()
            setattr(self, part, None)
