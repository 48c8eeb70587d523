"""The local runtime's composition root: the base container plus what stands in for AWS services
in this process (Step Functions, EventBridge -> SQS, the presigned-PUT endpoint)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from memory_engine.bootstrap import Container
from memory_engine.local.adapters.blob_store import LocalBlobStore
from memory_engine.local.adapters.event_sinks import LocalDeadLetters
from memory_engine.local.adapters.upload_inbox import DropFolderInbox
from memory_engine.local.conversion_waiter import ConversionWaiter, LocalTaskCallbacks
from memory_engine.local.event_queue import LocalEventQueue
from memory_engine.local.ingestion_slots import LocalPipelineStarter
from memory_engine.local.pipeline import PipelineRunner, invoke_ingestion_handler, invoke_streamed_producer
from memory_engine.local.priority import lower_thread_priority
from memory_engine.ports.blobs import UploadInbox
from memory_engine.ports.conversions import TaskCallbacks
from memory_engine.ports.events import DeadLetterSink
from memory_engine.ports.pipeline import PipelineStarter
from memory_engine.settings import Settings


class LocalContainer(Container):
    """``dead_letter_folder``: where dead letters are also written as JSON files (`memory-engine dev`
    uses ``$MEMORY_ENGINE_HOME/dead-letters``); without it they are kept in memory only."""

    def __init__(self, settings: Settings | None = None, *, dead_letter_folder: Path | None = None,
                 **overrides: Any) -> None:
        super().__init__(settings, **overrides)
        self.dead_letter_folder = dead_letter_folder

    @cached_property
    def pipeline_runner(self) -> PipelineRunner:
        """The ingestion state machine, run in-process on the Lambda handlers, with extraction
        overlapped with embedding (``domain.pipeline.STREAMED``); a run awaiting a converter's
        callback is parked and its conversion checked in the database (the callback may reach
        another process)."""
        waiter = ConversionWaiter(lambda: self.conversions)
        return PipelineRunner(invoke=invoke_ingestion_handler, stream=invoke_streamed_producer,
                              wait_for_token=waiter, check_token=waiter.check)

    @cached_property
    def task_callbacks(self) -> TaskCallbacks:
        """Step Functions when INGESTION_STATE_MACHINE_ARN is set; else nothing to send (the local
        runner sees the delivery in the database)."""
        if self.settings.state_machine_arn:
            return super().task_callbacks
        return LocalTaskCallbacks()

    @cached_property
    def pipeline_starter(self) -> PipelineStarter:
        """Step Functions when INGESTION_STATE_MACHINE_ARN is set; else the local runner on background
        threads (at background CPU priority, so API requests come first while a corpus drains),
        shared fairly between projects (``local/ingestion_slots.py``)."""
        if self.settings.state_machine_arn:
            return super().pipeline_starter
        return LocalPipelineStarter(self.pipeline_runner, workers=self.settings.resolved_ingest_workers,
                                    thread_initializer=lower_thread_priority)

    @cached_property
    def dead_letters(self) -> DeadLetterSink:
        """The extraction DLQ when ``EXTRACTION_DLQ_URL`` is set, else a list (and the folder)."""
        if self.settings.extraction_dlq_url:
            from memory_engine.adapters.sqs.dead_letters import SqsDeadLetterSink

            return SqsDeadLetterSink(self.aws.client("sqs"), queue_url=self.settings.extraction_dlq_url)
        return LocalDeadLetters(self.dead_letter_folder)

    @cached_property
    def event_queue(self) -> LocalEventQueue:
        """The EventBridge -> SQS stand-in feeding the extraction handler (``POST /v1/events``)."""
        return LocalEventQueue(self.dead_letters)

    @cached_property
    def upload_inbox(self) -> UploadInbox | None:
        """The drop folder receives PUTs to the local blob store's upload URLs."""
        blobs = self.blob_store
        return DropFolderInbox(blobs, self.settings.drop_dir) if isinstance(blobs, LocalBlobStore) else None

    def close(self) -> None:
        starter = self.__dict__.get("pipeline_starter")
        if isinstance(starter, LocalPipelineStarter):
            starter.shutdown()
        super().close()
