"""PipelineStarter on AWS: StartExecution of the ingestion state machine."""

from __future__ import annotations

import json
import re
from typing import Any

from botocore.exceptions import ClientError

from memory_engine.errors import DependencyError


class StepFunctionsPipelineStarter:
    """Takes its boto3 ``stepfunctions`` client. A run ``name`` makes starting idempotent:
    StartExecution with the same name and input returns the existing execution."""

    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._sfn = client
        self._arn = state_machine_arn

    def start(self, payload: dict[str, Any], *, name: str | None = None) -> str:
        args: dict[str, Any] = {"stateMachineArn": self._arn, "input": json.dumps(payload)}
        if name:
            args["name"] = re.sub(r"[^A-Za-z0-9_-]", "-", name)[:80]
        try:
            arn: str = self._sfn.start_execution(**args)["executionArn"]
            return arn
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return f"{self._arn}:{args.get('name')}"
            raise DependencyError(f"could not start the ingestion state machine: {exc}") from exc
