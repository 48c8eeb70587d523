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
    out = {}
    for name, state in asl["States"].items():
        if state["Type"] == "Task":
            out[name] = state
        if state["Type"] == "Map":
            out.update(state["ItemProcessor"]["States"])
    return out


def test_every_lambda_task_uses_the_invoke_integration_with_a_placeholder() -> None:
    asl = build_asl()
    tasks = _tasks(asl)
    assert {t["Parameters"]["FunctionName"] for t in tasks.values()} == {f"${{{p}}}" for p in STEP_FUNCTION_NAMES}
    for task in tasks.values():
        assert task["Resource"] == "arn:aws:states:::lambda:invoke"
        assert task["Parameters"]["Payload.$"] == "$" and task["OutputPath"] == "$.Payload"
    assert STEP_FUNCTION_NAMES == {
        "RegisterFunctionArn": "register", "ExtractFunctionArn": "extract", "ChunkFunctionArn": "chunk",
        "EmbedBatchFunctionArn": "embed_batch", "FinalizeFunctionArn": "finalize", "MarkFailedFunctionArn": "mark_failed",
    }


def test_the_state_graph_follows_the_pipeline_order() -> None:
    states = build_asl()["States"]
    assert states["Route"]["Default"] == "Register" and states["Route"]["Choices"][0]["Next"] == "Extract"
    assert states["Register"]["Next"] == "RegisterSkip"
    assert states["RegisterSkip"]["Choices"][0] == {"Variable": "$.skip", "BooleanEquals": True, "Next": "Unchanged"}
    assert states["RegisterSkip"]["Default"] == "Extract"
    assert states["Extract"]["Next"] == "Chunk" and states["Chunk"]["Next"] == "EmbedBatches"
    assert states["EmbedBatches"]["Next"] == "Finalize" and states["Finalize"]["End"] is True
    assert states["MarkFailed"]["Next"] == "IngestionFailed" and states["IngestionFailed"]["Type"] == "Fail"
    assert [s.name for s in PIPELINE] == ["Register", "Extract", "Chunk", "EmbedBatches", "Finalize"]


def test_every_step_is_caught_into_mark_failed_keeping_its_input() -> None:
    states = build_asl()["States"]
    for name in ("Register", "Extract", "Chunk", "EmbedBatches", "Finalize"):
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
    assert entry_step({"detail-type": "Object Created", "detail": {}}).name == "Register"
    assert entry_step({"document_id": "doc_x", "project_id": "p", "generation": 2}).name == "Extract"
