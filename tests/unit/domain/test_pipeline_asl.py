"""The one pipeline definition -> ASL: structure, retry/catch policy, payload routing."""

from __future__ import annotations

import json

import pytest

from memory_engine.domain.pipeline import (
    CONTENT_ERRORS,
    PIPELINE,
    STEP_FUNCTION_NAMES,
    THROTTLING_ERRORS,
    build_asl,
    entry_step,
)


def _tasks(asl: dict) -> dict:  # type: ignore[type-arg]
    """The Lambda tasks (the Express hand-off to the Standard machine is not one)."""
    out = {}
    for name, state in asl["States"].items():
        if state["Type"] == "Task" and state["Resource"].startswith("arn:aws:states:::lambda:"):
            out[name] = state
        if state["Type"] == "Map":
            out.update(state["ItemProcessor"]["States"])
    return out


def test_every_lambda_task_uses_the_invoke_integration_with_a_placeholder() -> None:
    asl = build_asl()
    tasks = _tasks(asl)
    assert {t["Parameters"]["FunctionName"] for t in tasks.values()} == {f"${{{p}}}" for p in STEP_FUNCTION_NAMES}
    for name, task in tasks.items():
        if name == "AwaitConversion":
            continue  # the task-token wait, below
        assert task["Resource"] == "arn:aws:states:::lambda:invoke"
        assert task["Parameters"]["Payload.$"] == "$" and task["OutputPath"] == "$.Payload"
    assert STEP_FUNCTION_NAMES == {
        "RegisterFunctionArn": "register", "ExtractFunctionArn": "extract", "ChunkFunctionArn": "chunk",
        "AwaitConversionFunctionArn": "await_conversion",
        "EmbedBatchFunctionArn": "embed_batch", "FinalizeFunctionArn": "finalize", "MarkFailedFunctionArn": "mark_failed",
    }


def test_await_conversion_waits_for_a_task_token_until_the_conversion_deadline() -> None:
    """Given the Standard definition, When a converter answered pending, Then AwaitConversion invokes
    its function with the run and the task token and waits for SendTaskSuccess (its output is what
    the callback sends), at most the run's deadline, and is caught into MarkFailed like every step."""
    states = build_asl()["States"]
    wait = states["AwaitConversion"]
    assert wait["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken"
    assert wait["Parameters"] == {"FunctionName": "${AwaitConversionFunctionArn}",
                                  "Payload": {"run.$": "$", "task_token.$": "$$.Task.Token"}}
    assert "OutputPath" not in wait and wait["TimeoutSecondsPath"] == "$.awaiting_conversion.deadline_seconds"
    assert wait["Next"] == "Chunk"
    assert wait["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "MarkFailed"}]
    needed = states["AwaitConversionNeeded"]
    assert needed["Default"] == "Chunk" and needed["Choices"][0]["Next"] == "AwaitConversion"
    assert needed["Choices"][0]["And"] == [{"Variable": "$.awaiting_conversion", "IsPresent": True},
                                           {"Variable": "$.awaiting_conversion", "IsNull": False}]


def test_express_hands_a_waiting_run_to_the_standard_machine() -> None:
    """Given the Express definition (which cannot wait for a task token), When a run awaits a
    callback, Then it starts the Standard machine with the run (named per document generation, so a
    repeat is one execution) and ends; the Standard Route sends such a run straight to AwaitConversion."""
    express = build_asl(express=True)["States"]
    hand_off = express["AwaitConversion"]
    assert hand_off["Resource"] == "arn:aws:states:::states:startExecution"
    assert hand_off["Parameters"]["StateMachineArn"] == "${StandardStateMachineArn}"
    assert hand_off["Parameters"]["Input.$"] == "$" and "document_id" in hand_off["Parameters"]["Name.$"]
    assert hand_off["Next"] == "HandedOffToStandard" and express["HandedOffToStandard"]["Type"] == "Succeed"
    assert not any(".waitForTaskToken" in json.dumps(state) for state in express.values())
    route = build_asl()["States"]["Route"]
    assert route["Choices"][0]["Next"] == "AwaitConversion"
    assert entry_step({"document_id": "d", "awaiting_conversion": {"converter_url": "u", "deadline_seconds": 5}}).name \
        == "AwaitConversion"
    assert entry_step({"document_id": "d", "awaiting_conversion": None}).name == "Extract"


def test_the_state_graph_follows_the_pipeline_order() -> None:
    states = build_asl()["States"]
    assert states["Route"]["Default"] == "Register" and states["Route"]["Choices"][1]["Next"] == "Extract"
    assert states["Register"]["Next"] == "RegisterSkip"
    assert states["RegisterSkip"]["Choices"][0] == {"Variable": "$.skip", "BooleanEquals": True, "Next": "Unchanged"}
    assert states["RegisterSkip"]["Default"] == "Extract"
    assert states["Extract"]["Next"] == "AwaitConversionNeeded" and states["Chunk"]["Next"] == "EmbedBatches"
    assert states["EmbedBatches"]["Next"] == "Finalize" and states["Finalize"]["End"] is True
    assert states["MarkFailed"]["Next"] == "IngestionFailed" and states["IngestionFailed"]["Type"] == "Fail"
    assert [s.name for s in PIPELINE] == ["Register", "Extract", "AwaitConversion", "Chunk", "EmbedBatches", "Finalize"]


def test_every_step_is_caught_into_mark_failed_keeping_its_input() -> None:
    states = build_asl()["States"]
    for name in ("Register", "Extract", "AwaitConversion", "Chunk", "EmbedBatches", "Finalize"):
        assert states[name]["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "MarkFailed"}]
    assert "Catch" not in states["MarkFailed"]


def test_content_errors_are_never_retried_and_throttling_is_retried_with_backoff() -> None:
    asl = build_asl()
    for task in _tasks(asl).values():
        retried = {e for r in task["Retry"] for e in r["ErrorEquals"]}
        assert not retried & set(CONTENT_ERRORS)
        assert "States.ALL" not in retried
    embed = asl["States"]["EmbedBatches"]["ItemProcessor"]["States"]["EmbedBatch"]
    throttling = next(r for r in embed["Retry"] if set(THROTTLING_ERRORS) <= set(r["ErrorEquals"]))
    assert throttling["BackoffRate"] > 1 and throttling["MaxAttempts"] >= 3


@pytest.mark.parametrize("concurrency", [1, 4, 10])
def test_embed_map_is_bounded_and_carries_small_items(concurrency: int) -> None:
    state = build_asl(map_max_concurrency=concurrency)["States"]["EmbedBatches"]
    assert state["MaxConcurrency"] == concurrency and state["ItemsPath"] == "$.batches"
    assert state["ItemSelector"] == {"project_id.$": "$.project_id", "document_id.$": "$.document_id",
                                     "generation.$": "$.generation", "batch.$": "$$.Map.Item.Value"}
    assert state["ResultPath"] is None  # batch results live in the database, not in the 256 KB state


def test_map_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError):
        build_asl(map_max_concurrency=0)


def test_asl_is_plain_json_and_entry_routing_matches_the_choice_state() -> None:
    assert json.loads(json.dumps(build_asl())) == build_asl()
    assert json.loads(json.dumps(build_asl(express=True))) == build_asl(express=True)
    assert entry_step({"detail-type": "Object Created", "detail": {}}).name == "Register"
    assert entry_step({"document_id": "doc_x", "project_id": "p", "generation": 2}).name == "Extract"
