"""StepFunctionsPipelineStarter against moto's Step Functions: small documents start the Express
machine, large or unsized ones the Standard machine, and a repeated name is one run."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memory_engine.adapters.stepfunctions.starter import StepFunctionsPipelineStarter
from memory_engine.domain.pipeline import SMALL_DOCUMENT_BYTES, build_asl

ROLE = "arn:aws:iam::123456789012:role/pipeline"


@pytest.fixture
def sfn() -> Any:
    with mock_aws():
        yield boto3.client("stepfunctions", region_name="us-east-1")


def _machine(sfn: Any, name: str, kind: str) -> str:
    arn: str = sfn.create_state_machine(name=name, definition=json.dumps(build_asl()), roleArn=ROLE, type=kind)[
        "stateMachineArn"]
    return arn


def _executions(sfn: Any, arn: str) -> list[str]:
    return [e["name"] for e in sfn.list_executions(stateMachineArn=arn)["executions"]]


def test_small_documents_take_the_express_machine_and_the_rest_the_standard_one(sfn: Any) -> None:
    # Given both machines of the deployed stack
    standard, express = _machine(sfn, "pipeline", "STANDARD"), _machine(sfn, "small", "EXPRESS")
    starter = StepFunctionsPipelineStarter(sfn, standard, express)
    run = {"project_id": "proj_1", "document_id": "doc_1", "generation": 1}
    # When documents of each size start
    starter.start(run, name="doc_small-g1", size_bytes=2_000)
    starter.start(run, name="doc_edge-g1", size_bytes=SMALL_DOCUMENT_BYTES)
    starter.start(run, name="doc_large-g1", size_bytes=SMALL_DOCUMENT_BYTES + 1)
    starter.start(run, name="doc_unknown-g1")
    # Then up to the bound they run on Express, above it (or of unknown size) on Standard
    assert sorted(_executions(sfn, express)) == ["doc_edge-g1", "doc_small-g1"]
    assert sorted(_executions(sfn, standard)) == ["doc_large-g1", "doc_unknown-g1"]


def test_without_an_express_machine_everything_runs_on_standard_and_a_name_is_one_run(sfn: Any) -> None:
    standard = _machine(sfn, "pipeline", "STANDARD")
    starter = StepFunctionsPipelineStarter(sfn, standard)
    run = {"project_id": "proj_1", "document_id": "doc_1", "generation": 1}
    first = starter.start(run, name="doc_1-g1", size_bytes=10)
    again = starter.start(run, name="doc_1-g1", size_bytes=10)
    assert _executions(sfn, standard) == ["doc_1-g1"]
    assert first.endswith("doc_1-g1") and again.endswith("doc_1-g1")
