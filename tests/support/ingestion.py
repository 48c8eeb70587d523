"""Helpers for ingestion tests: real EventBridge S3 event JSON, running the pipeline."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from memory_engine.bootstrap import Container
from memory_engine.local.pipeline import PipelineResult, PipelineRunner


def object_created_event(bucket: str, key: str, size: int, *, etag: str = "0123456789abcdef0123456789abcdef",
                         event_id: str | None = None) -> dict[str, Any]:
    """The documented EventBridge "Object Created" event (S3 user guide, ev-events)."""
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "111122223333",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {"key": key, "size": size, "etag": etag, "sequencer": "00617F08299329D189"},
            "request-id": "N4N7GDK58NMKJ12R",
            "requester": "123456789012",
            "source-ip-address": "1.2.3.4",
            "reason": "PutObject",
        },
    }


def upload_and_ingest(container: Container, project_id: str, path: str, data: bytes, *,
                      content_type: str | None = None, runner: PipelineRunner | None = None) -> PipelineResult:
    """Put the bytes where an upload lands and run the pipeline on the S3 event."""
    key = f"projects/{project_id}/{path.lstrip('/')}"
    container.blob_store.put(key, data, content_type=content_type)
    event = object_created_event(container.blob_store.bucket, key, len(data))
    return (runner or fast_runner(container)).run(event)


def fast_runner(container: Container, **kwargs: Any) -> PipelineRunner:
    """The container's runner with retry delays scaled down (the policy is the same)."""
    base = container.pipeline_runner
    return PipelineRunner(invoke=kwargs.pop("invoke", base.invoke), map_concurrency=kwargs.pop("map_concurrency", 2),
                          stream=kwargs.pop("stream", base.stream), retry_delay_scale=0.0,
                          wait_for_token=kwargs.pop("wait_for_token", base.wait_for_token),
                          check_token=kwargs.pop("check_token", base.check_token), **kwargs)
