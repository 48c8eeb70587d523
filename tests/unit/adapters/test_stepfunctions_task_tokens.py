"""StepFunctionsTaskCallbacks with botocore's Stubber (real request/response shapes): the callback
resumes a waiting run with SendTaskSuccess (the run as JSON) or SendTaskFailure (the converter's
error as a Lambda-style cause), and a token nobody waits on any more is ignored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from memory_engine.adapters.stepfunctions.task_tokens import StepFunctionsTaskCallbacks
from memory_engine.domain.documents import FailedRun
from memory_engine.errors import DependencyError


@pytest.fixture
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("stepfunctions", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_success_sends_the_run_as_the_states_output(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    run = {"project_id": "p", "document_id": "d", "generation": 2, "pages_key": "_work/d/2/converted.json"}
    stubber.add_response("send_task_success", {}, {"taskToken": "tok", "output": json.dumps(run)})
    StepFunctionsTaskCallbacks(client).succeed("tok", run)


def test_failure_carries_the_error_name_and_a_cause_mark_failed_reads(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    cause = json.dumps({"errorMessage": "the scan is too blurry", "errorType": "ConverterFailed"})
    stubber.add_response("send_task_failure", {}, {"taskToken": "tok", "error": "ConverterFailed", "cause": cause})
    StepFunctionsTaskCallbacks(client).fail("tok", "ConverterFailed", "the scan is too blurry")
    # the Catch puts {Error, Cause} at $.failure: MarkFailed reads the converter's own message
    failed = FailedRun.model_validate({"document_id": "d", "failure": {"Error": "ConverterFailed", "Cause": cause}})
    assert failed.failure.message == "the scan is too blurry"


@pytest.mark.parametrize("code", ["TaskTimedOut", "InvalidToken", "TaskDoesNotExist"])
def test_a_token_no_longer_waited_on_is_ignored(stubbed: tuple[Any, Stubber], code: str) -> None:
    client, stubber = stubbed
    stubber.add_client_error("send_task_success", service_error_code=code, http_status_code=400)
    StepFunctionsTaskCallbacks(client).succeed("tok", {})


def test_other_errors_are_a_dependency_error(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_client_error("send_task_success", service_error_code="ThrottlingException", http_status_code=400)
    with pytest.raises(DependencyError):
        StepFunctionsTaskCallbacks(client).succeed("tok", {})
