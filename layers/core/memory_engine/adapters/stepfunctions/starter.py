"""PipelineStarter on AWS: StartExecution of the ingestion state machine."""

from __future__ import annotations

import json
import re
from typing import Any

from botocore.exceptions import ClientError

from memory_engine.domain.pipeline import is_small
from memory_engine.errors import DependencyError


class StepFunctionsPipelineStarter:
    """Takes its boto3 ``stepfunctions`` client. A run ``name`` makes starting idempotent on the
    Standard machine (StartExecution with the same name and input returns the existing execution).
    Documents of at most SMALL_DOCUMENT_BYTES go to the Express machine when there is one: the same
    definition, at-least-once (every step is idempotent), billed per request instead of per state
    transition."""

    def __init__(self, client: Any, state_machine_arn: str, express_state_machine_arn: str | None = None) -> None:
        self._sfn = client
        self._arn = state_machine_arn
        self._express_arn = express_state_machine_arn

    def start(self, payload: dict[str, Any], *, name: str | None = None, size_bytes: int | None = None) -> str:
        machine = self._express_arn if self._express_arn and is_small(size_bytes) else self._arn
        args: dict[str, Any] = {"stateMachineArn": machine, "input": json.dumps(payload)}
        if name:
            args["name"] = re.sub(r"[^A-Za-z0-9_-]", "-", name)[:80]
        try:
            execution: str = self._sfn.start_execution(**args)["executionArn"]
            return execution
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return f"{machine.replace(':stateMachine:', ':execution:')}:{args.get('name')}"
            raise DependencyError(f"could not start the ingestion state machine: {exc}") from exc
