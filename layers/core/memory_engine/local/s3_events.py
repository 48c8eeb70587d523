"""The documented EventBridge S3 "Object Created" event, built for local uploads so the
register step gets exactly the shape it gets on AWS."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any


def object_created_event(bucket: str, key: str, size: int, *, reason: str = "PutObject",
                         event_id: str | None = None, region: str = "local") -> dict[str, Any]:
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "000000000000",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {"key": key, "size": size, "sequencer": f"{datetime.now(UTC).timestamp():018.6f}"},
            "request-id": uuid.uuid4().hex[:16].upper(),
            "requester": "000000000000",
            "source-ip-address": "127.0.0.1",
            "reason": reason,
        },
    }
