"""The local stand-in for Step Functions: executes :data:`memory_engine.domain.pipeline.PIPELINE`
in-process with the state machine's semantics, invoking the ``functions/ingestion/handler.py``
attributes with a Lambda-shaped context as Step Functions would.

Same entry routing (S3 event -> Register; prepared DocumentRun -> Extract), same payloads
between the same handlers, same Retry policies (error name = exception class name, exponential
backoff), the embed Map with bounded concurrency, and any failure after retries handed to
``mark_failed`` with ``failure: {Error, Cause}`` exactly as an ASL Catch would.

One difference, declared in the pipeline definition (:data:`memory_engine.domain.pipeline.STREAMED`):
with a ``stream`` invoker the runner overlaps Extract and Chunk with the EmbedBatches Map (pages are
chunked and embedded while later pages are parsed), so a long PDF is bound by the model, not the parser.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from memory_engine.domain.pipeline import (
    CATCH_ALL,
    FAILURE_FIELD,
    FAILURE_HANDLER,
    PIPELINE,
    STREAMED,
    RetryPolicy,
    Step,
    entry_step,
)
from memory_engine.local.lambda_runtime import LocalLambdaContext, load_handler

logger = logging.getLogger(__name__)

#: The ingestion Lambda's code, one handler attribute per task state.
HANDLER_MODULE = "ingestion/handler"

#: ``invoke(handler_attribute, payload) -> result payload`` (JSON-able dicts, as Lambda sees them).
StepInvoker = Callable[[str, dict[str, Any]], dict[str, Any]]
#: ``stream(handler, payload, emit) -> result payload``: a :data:`STREAMED` producer pass that calls
#: ``emit(item)`` with each Map item of the consumer as soon as it exists.
StreamInvoker = Callable[[str, dict[str, Any], Callable[[dict[str, Any]], None]], dict[str, Any]]
#: Map items the streamed producer may run ahead of the consumer (each is a batch object's key,
#: the batch itself is in the blob store): bounds how far parsing runs ahead of the model.
STREAM_AHEAD_ITEMS = 4


@dataclass
class PipelineResult:
    status: str  # "succeeded" | "unchanged" | "failed"
    state: dict[str, Any]
    error: str | None = None
    seconds_by_step: dict[str, float] = field(default_factory=dict)


def invoke_ingestion_handler(attribute: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Call one step's handler in-process, as Step Functions invokes the task's Lambda."""
    handler = load_handler(HANDLER_MODULE, attribute)
    result: dict[str, Any] = handler(payload, LocalLambdaContext(function_name=f"memory-engine-ingest-{attribute}"))
    return result


def invoke_streamed_producer(attribute: str, payload: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run the streamed producer ``services.ingestion.steps.<attribute>`` in-process, as the ingestion
    handler runs a step: the function's settings checked, the payload parsed, the result as JSON."""
    from memory_engine import constants as c
    from memory_engine.bootstrap import get_container
    from memory_engine.domain.documents import ChunkBatchRef, DocumentRun
    from memory_engine.services.ingestion import steps

    container = get_container()
    container.check(c.FUNCTION_INGESTION)
    producer = getattr(steps, attribute)

    def emit_ref(ref: ChunkBatchRef) -> None:
        emit(ref.model_dump(mode="json"))

    result: DocumentRun = producer(DocumentRun.model_validate(payload), container.ingestion_ports, emit_ref)
    return result.model_dump(mode="json")


class _ConsumerFailed(Exception):
    """Stops the streamed producer once the consumer has failed (never reported itself)."""


class TaskTimedOut(Exception):
    """A waiting step's timeout passed (the ASL error ``States.Timeout``)."""

    states_error = "States.Timeout"


class TaskFailed(Exception):
    """The token of a waiting step was failed with ``error`` (e.g. ``ConverterFailed``) and ``cause``."""

    def __init__(self, error: str, cause: str) -> None:
        super().__init__(cause)
        self.states_error = error
        self.message = cause


#: ``(state, task_token, timeout_seconds) -> output``: waits until the token of a waiting step is
#: sent (raises TaskFailed) or the timeout passes (raises TaskTimedOut).
TokenWaiter = Callable[[dict[str, Any], str, float], dict[str, Any]]


#: ``(state, task_token) -> output | None``: the output once the token of a waiting step is sent,
#: None while it is awaited; raises TaskFailed when the token was failed.
TokenCheck = Callable[[dict[str, Any], str], dict[str, Any] | None]


@dataclass
class Parked:
    """A run stopped at a step that waits for a task token (:meth:`PipelineRunner.advance`): what
    it waits for and where it goes on. Whoever holds it resumes it with :meth:`PipelineRunner.resume`
    once the token is sent, or ends it with :meth:`PipelineRunner.fail`."""

    state: dict[str, Any]  # the waiting step's input (and the state MarkFailed gets)
    step: Step
    task_token: str
    timeout_s: float
    resume_at: int  # index in PIPELINE of the step after the waiting one
    timings: dict[str, float] = field(default_factory=dict)


def error_name(exc: BaseException) -> str:
    return str(getattr(exc, "states_error", None) or type(exc).__name__)


def _failure(exc: BaseException) -> dict[str, str]:
    message = getattr(exc, "message", None) or str(exc)
    return {"Error": error_name(exc), "Cause": json.dumps({"errorMessage": message, "errorType": error_name(exc)})}


@dataclass
class PipelineRunner:
    """``run`` blocks until the run ends; it never raises for a step failure (that is a
    ``failed`` result, recorded on the document by mark_failed)."""

    invoke: StepInvoker
    map_concurrency: int = 2
    #: Runs the :data:`STREAMED` steps overlapped (None: one after the other, as the state machine).
    stream: StreamInvoker | None = None
    sleep: Callable[[float], None] = time.sleep
    #: Multiplies every retry delay (1.0 = the ASL's own delays).
    retry_delay_scale: float = 1.0
    #: How a step that waits for a task token waits in :meth:`run` (None: such a step fails the run)
    wait_for_token: TokenWaiter | None = None
    #: Whether a parked run's token was sent: its output, None while it is still awaited; raises
    #: TaskFailed when the token was failed (None: :meth:`advance` does not park)
    check_token: TokenCheck | None = None

    def run(self, payload: dict[str, Any]) -> PipelineResult:
        """The whole run on this thread (a step that waits for a task token waits here)."""
        outcome = self._walk(dict(payload), PIPELINE.index(entry_step(payload)), {}, park=False)
        assert isinstance(outcome, PipelineResult)
        return outcome

    def advance(self, payload: dict[str, Any]) -> PipelineResult | Parked:
        """The run up to its end, or up to a step that waits for a task token: that step's task is
        invoked (it records the token) and the run is returned :class:`Parked`, holding no thread
        while it waits (as a ``.waitForTaskToken`` state holds no Lambda). Without ``check_token``
        nobody could resume it, so the run waits here as in :meth:`run`."""
        return self._walk(dict(payload), PIPELINE.index(entry_step(payload)), {}, park=self.check_token is not None)

    def resume(self, parked: Parked, output: dict[str, Any]) -> PipelineResult | Parked:
        """Go on after the waiting step with the token's ``output`` (what SendTaskSuccess sends)."""
        return self._walk(dict(output), parked.resume_at, parked.timings, park=True)

    def fail(self, parked: Parked, exc: BaseException) -> PipelineResult:
        """End a parked run through the failure handler (its token failed or its timeout passed)."""
        return self._failed(parked.step, parked.state, exc, parked.timings)

    def _walk(self, state: dict[str, Any], start: int, timings: dict[str, float], *,
              park: bool) -> PipelineResult | Parked:
        streamed_done: set[str] = set()
        for index in range(start, len(PIPELINE)):
            step = PIPELINE[index]
            if step.only_when is not None and state.get(step.only_when) is None:
                continue
            if step.name in streamed_done:
                continue  # ran within the streamed pass
            began = time.perf_counter()
            try:
                if self.stream is not None and step is STREAMED.producers[0]:
                    state = self._run_streamed(state, timings)
                    if not (STREAMED.stopped_when and state.get(STREAMED.stopped_when)):  # else: awaiting a converter
                        streamed_done = {s.name for s in (*STREAMED.producers[1:], STREAMED.consumer)}
                elif step.map is not None:
                    self._run_map(step, state)
                elif step.waits_for_token and park:
                    token = self._begin_wait(step, state)
                    timings[step.name] = time.perf_counter() - began
                    return Parked(state, step, token, self._timeout(step, state), index + 1, timings)
                elif step.waits_for_token:
                    state = self._wait(step, state)
                else:
                    state = self._call(step, state)
            except Exception as exc:
                timings[step.name] = time.perf_counter() - began
                return self._failed(step, state, exc, timings)
            timings.setdefault(step.name, time.perf_counter() - began)
            if step.stop_when is not None and state.get(step.stop_when[0]):
                return PipelineResult("unchanged", state, seconds_by_step=timings)
        return PipelineResult("succeeded", state, seconds_by_step=timings)

    def _failed(self, step: Step, state: dict[str, Any], exc: BaseException,
                timings: dict[str, float]) -> PipelineResult:
        """The ASL Catch: ``exc`` handed to the failure handler with the state the step had."""
        logger.info("ingestion step %s failed: %s", step.name, exc)
        result = self._call(FAILURE_HANDLER, {**state, FAILURE_FIELD: _failure(exc)})
        return PipelineResult("failed", state, error=result.get("error") or str(exc), seconds_by_step=timings)

    def _call(self, step: Step, payload: dict[str, Any],
              invoke: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> dict[str, Any]:
        """One task with its Retry list: each policy counts its own attempts (ASL semantics)."""
        attempts: dict[int, int] = {}
        while True:
            try:
                return invoke(payload) if invoke is not None else self.invoke(step.handler, payload)
            except Exception as exc:
                policy_index, policy = _matching(step.retry, error_name(exc))
                if policy is None:
                    raise
                attempts[policy_index] = attempts.get(policy_index, 0) + 1
                if attempts[policy_index] > policy.max_attempts:
                    raise
                delay = policy.delay(attempts[policy_index]) * self.retry_delay_scale
                logger.info("retrying %s after %s in %.1fs (attempt %d)", step.name, error_name(exc), delay,
                            attempts[policy_index])
                self.sleep(delay)

    def _run_streamed(self, state: dict[str, Any], timings: dict[str, float]) -> dict[str, Any]:
        """The :data:`STREAMED` steps overlapped: the producer pass (the first producer's Retry list)
        on this thread, the consumer's Map items embedded by ``map_concurrency`` workers as they come,
        at most STREAM_AHEAD_ITEMS waiting. A failure on either side stops both and raises; a
        retried producer hands over only the items it had not handed over before (same objects)."""
        assert self.stream is not None and STREAMED.consumer.map is not None
        spec, consumer, stream = STREAMED.consumer.map, STREAMED.consumer, self.stream
        carried = {name: state[name] for name in spec.carried_fields if name in state}
        items: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=STREAM_AHEAD_ITEMS)
        failed = threading.Event()
        errors: list[BaseException] = []
        handed: set[Any] = set()
        began = time.perf_counter()

        def emit(value: dict[str, Any]) -> None:
            identity = json.dumps(value, sort_keys=True)
            if identity in handed:
                return
            handed.add(identity)
            while not failed.is_set():
                try:
                    items.put({**carried, spec.item_field: value}, timeout=0.05)
                    return
                except queue.Full:
                    continue
            raise _ConsumerFailed

        def consume() -> None:
            while (item := items.get()) is not None:
                if failed.is_set():
                    continue
                try:
                    self._call(consumer, item)
                except Exception as exc:
                    errors.append(exc)
                    failed.set()

        workers = [threading.Thread(target=consume, name=f"embed-{i}", daemon=True)
                   for i in range(max(1, self.map_concurrency))]
        for worker in workers:
            worker.start()
        try:
            result = self._call(STREAMED.producers[0], state, lambda payload: stream(STREAMED.handler, payload, emit))
        except _ConsumerFailed:
            result = state
        except Exception:
            failed.set()
            raise
        finally:
            timings["+".join(p.name for p in STREAMED.producers)] = time.perf_counter() - began
            for _ in workers:
                items.put(None)
            for worker in workers:
                worker.join()
            timings[consumer.name] = time.perf_counter() - began
        if errors:
            raise errors[0]
        return result

    def _begin_wait(self, step: Step, state: dict[str, Any]) -> str:
        """Invoke a ``.waitForTaskToken`` task with the run and a new token; the token."""
        token = f"local-{uuid.uuid4().hex}"
        self._call(step, {"run": state, "task_token": token})
        return token

    @staticmethod
    def _timeout(step: Step, state: dict[str, Any]) -> float:
        """The waiting step's timeout from the payload (as ``TimeoutSecondsPath`` reads it)."""
        timeout: Any = state
        for part in (step.timeout_path or "").split("."):
            timeout = timeout.get(part) if isinstance(timeout, dict) else None
        return float(timeout or 0)

    def _wait(self, step: Step, state: dict[str, Any]) -> dict[str, Any]:
        """A ``.waitForTaskToken`` task: invoke it with the run and a token, then wait for the token
        (at most the timeout the payload gives, as ``TimeoutSecondsPath`` does)."""
        token = self._begin_wait(step, state)
        if self.wait_for_token is None:
            raise TaskFailed("States.Runtime", f"the local runner cannot wait in {step.name}: no token waiter")
        return self.wait_for_token(state, token, self._timeout(step, state))

    def _run_map(self, step: Step, state: dict[str, Any]) -> None:
        assert step.map is not None
        spec = step.map
        items = [
            {**{name: state[name] for name in spec.carried_fields}, spec.item_field: value}
            for value in state.get(spec.items_field) or []
        ]
        if not items:
            return
        with ThreadPoolExecutor(max_workers=max(1, self.map_concurrency), thread_name_prefix="embed") as pool:
            futures: list[Future[dict[str, Any]]] = [pool.submit(self._call, step, item) for item in items]
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for future in pending:
                future.cancel()
            for future in done:
                error = future.exception()
                if error is not None:
                    raise error


def _matching(policies: tuple[RetryPolicy, ...], name: str) -> tuple[int, RetryPolicy | None]:
    for index, policy in enumerate(policies):
        if name in policy.errors or CATCH_ALL in policy.errors:
            return index, policy
    return -1, None
