"""TaskCallbacks on AWS: ``SendTaskSuccess`` / ``SendTaskFailure`` resume a ``.waitForTaskToken`` state."""

from __future__ import annotations

import json
import logging
from typing import Any

from botocore.exceptions import ClientError

from memory_engine.errors import DependencyError

logger = logging.getLogger(__name__)

#: The token is no longer waited on (the state timed out, the execution ended): nothing to resume.
_GONE = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})


class StepFunctionsTaskCallbacks:
    """Takes its boto3 ``stepfunctions`` client."""

    def __init__(self, client: Any) -> None:
        self._sfn = client

    def succeed(self, task_token: str, output: dict[str, Any]) -> None:
        self._send("send_task_success", taskToken=task_token, output=json.dumps(output))

    def fail(self, task_token: str, error: str, cause: str) -> None:
        # the Cause as a Lambda error JSON, so MarkFailed reads the message as from any step
        self._send("send_task_failure", taskToken=task_token, error=error[:256],
                   cause=json.dumps({"errorMessage": cause[:30000], "errorType": error})[:32768])

    def _send(self, operation: str, **kwargs: Any) -> None:
        try:
            getattr(self._sfn, operation)(**kwargs)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in _GONE:
                logger.info("%s: the task token is no longer waited on (%s)", operation, code)
                return
            raise DependencyError(f"could not resume the ingestion run: {exc}") from exc
