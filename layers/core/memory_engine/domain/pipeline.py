"""The ingestion pipeline, defined once: ordered steps with their retry/catch policy.

Two things are built from :data:`PIPELINE`:

* :func:`build_asl` -> the Amazon States Language of the AWS state machine (CDK passes the
  ``${...FunctionArn}`` placeholders as ``definition_substitutions``);
* the local runner (:mod:`memory_engine.local.pipeline`) walks the same steps
  in-process, passing the same JSON payloads between the same handlers, applying the same
  retry policy and routing any failure to the same ``mark_failed`` step.

Data flow (every payload is a :class:`memory_engine.domain.documents.DocumentRun` except where noted)::

    S3 "Object Created" event ─► Register ─► (skip? ─► Unchanged)
    DocumentRun (API re-ingest) ─────────────► Extract ─► (converter answered pending? ─► AwaitConversion)
                                               ─► Chunk ─► EmbedBatches (Map) ─► Finalize
    any error ─► MarkFailed ─► IngestionFailed (Fail)

AwaitConversion waits for a task token (``.waitForTaskToken`` on AWS; the local runner polls):
the converter's callback resumes it, its timeout is the conversion's deadline. Express state
machines cannot wait for a task token, so the Express build hands such a run to the Standard
machine (``${StandardStateMachineArn}``), whose Route sends it straight to AwaitConversion.

Steps raise *named* errors (the exception class name is the Lambda ``errorType`` that ASL
matches): content problems (``EncryptedPdf``, ``NoTextLayer``, ...) are never retried and go
straight to MarkFailed; transient ones (``EmbeddingThrottled``, ``DatabaseError``, Lambda
service errors) are retried with exponential backoff first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: How the state machine's Map over embed batches is bounded by default.
DEFAULT_MAP_CONCURRENCY = 4
#: Documents up to this size run on the Express state machine (same definition): a Standard
#: execution bills ~6-8 state transitions per document, an Express one a request and seconds of
#: duration (docs/ingestion.md "What a document costs"). The bound keeps a run far inside Express's
#: 5-minute limit: 256 KiB of text is at most ~9 embed batches, and PDFs this small have few pages.
SMALL_DOCUMENT_BYTES = 256 * 1024
#: Express executions stop after 5 minutes (the service's limit).
EXPRESS_TIMEOUT_SECONDS = 300


def is_small(size_bytes: int | None) -> bool:
    """Whether a document of this size takes the Express path (unknown size: Standard)."""
    return size_bytes is not None and size_bytes <= SMALL_DOCUMENT_BYTES


@dataclass(frozen=True)
class RetryPolicy:
    """One ASL ``Retry`` entry. Interval * backoff_rate**n seconds before attempt n+1."""

    errors: tuple[str, ...]
    interval_seconds: float = 2
    max_attempts: int = 3
    backoff_rate: float = 2.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        return float(self.interval_seconds * self.backoff_rate ** (attempt - 1))

    def to_asl(self) -> dict[str, Any]:
        return {
            "ErrorEquals": list(self.errors),
            "IntervalSeconds": int(self.interval_seconds),
            "MaxAttempts": self.max_attempts,
            "BackoffRate": self.backoff_rate,
        }


@dataclass(frozen=True)
class MapSpec:
    """Run the step once per element of ``items_field``; each item is the payload
    ``{<carried fields>..., <item_field>: element}``; results are discarded (the state passes through)."""

    items_field: str
    item_field: str
    carried_fields: tuple[str, ...]


@dataclass(frozen=True)
class Streamed:
    """Consecutive steps a runner may overlap: ``producers`` run as one pass (``handler``, same
    input as the first producer, same output as the last) that hands every element of the
    consumer's Map items to it as soon as it exists, so the consumer works while later input is
    produced. The ASL keeps them as separate states (one Lambda each); the local runner streams."""

    producers: tuple[Step, ...]
    consumer: Step
    handler: str
    #: When the pass's output has this field set, it stopped after the first producer (its output
    #: is that step's) and the run goes on with the steps after it, one after the other.
    stopped_when: str | None = None


@dataclass(frozen=True)
class Step:
    """One Lambda task. ``handler`` is the attribute of ``functions/ingestion/handler.py``;
    ``function_placeholder`` is the ASL substitution variable holding that Lambda's ARN."""

    name: str
    handler: str
    function_placeholder: str
    retry: tuple[RetryPolicy, ...] = ()
    map: MapSpec | None = None
    #: ``(field, state)``: when the step's output has ``field`` true, the run stops at ``state``.
    stop_when: tuple[str, str] | None = None
    #: the step runs only when the payload's ``only_when`` field is set (not null); else it is passed over
    only_when: str | None = None
    #: the step waits for a task token (its input is ``{"run": <state>, "task_token"}``, its output
    #: what the token's sender sends); ``timeout_path`` is the payload field holding its timeout in seconds
    waits_for_token: bool = False
    timeout_path: str | None = None
    comment: str = ""


# --- error names (exception class names raised by the steps) ---
LAMBDA_TRANSIENT_ERRORS = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
)
DEPENDENCY_ERRORS = ("DatabaseError", "DependencyError", "BlobStoreError")
THROTTLING_ERRORS = ("EmbeddingThrottled", "EmbeddingError")
#: Content problems: never retried; the message says what is wrong and what to do.
CONTENT_ERRORS = (
    "DocumentUnreadable",
    "EncryptedPdf",
    "NoTextLayer",
    "TooLarge",
    "UnsupportedContentType",
    "ConverterFailed",
    "InvalidObjectKey",
    "DocumentGone",
)
CATCH_ALL = "States.ALL"

LAMBDA_RETRY = RetryPolicy(LAMBDA_TRANSIENT_ERRORS, interval_seconds=2, max_attempts=6, backoff_rate=2.0)
DEPENDENCY_RETRY = RetryPolicy(DEPENDENCY_ERRORS, interval_seconds=2, max_attempts=3, backoff_rate=2.0)
THROTTLING_RETRY = RetryPolicy(THROTTLING_ERRORS, interval_seconds=1, max_attempts=6, backoff_rate=2.0)

# --- state names ---
ROUTE_STATE = "Route"
UNCHANGED_STATE = "Unchanged"
FAILED_STATE = "IngestionFailed"
EMBED_ITEM_STATE = "EmbedBatch"

REGISTER = Step(
    "Register", "register", "RegisterFunctionArn", (LAMBDA_RETRY, DEPENDENCY_RETRY),
    stop_when=("skip", UNCHANGED_STATE),
    comment="S3 Object Created event -> document row `processing` (no-op when the same bytes are already there)",
)
EXTRACT = Step(
    "Extract", "extract", "ExtractFunctionArn", (LAMBDA_RETRY, DEPENDENCY_RETRY),
    comment="object -> pages of text, stored as one S3 object under _work/ (or a converter's `pending`)",
)
#: The payload field Extract sets when the converter answered ``pending`` (a ConversionWait).
AWAITING_FIELD = "awaiting_conversion"
AWAIT_CONVERSION = Step(
    "AwaitConversion", "await_conversion", "AwaitConversionFunctionArn", (LAMBDA_RETRY, DEPENDENCY_RETRY),
    only_when=AWAITING_FIELD, waits_for_token=True, timeout_path=f"{AWAITING_FIELD}.deadline_seconds",
    comment="wait for the converter's callback (task token); its timeout is the conversion's deadline",
)
CHUNK = Step(
    "Chunk", "chunk", "ChunkFunctionArn", (LAMBDA_RETRY, DEPENDENCY_RETRY),
    comment="pages -> chunks, stored as batch objects under _work/; the state carries only their keys",
)
EMBED = Step(
    "EmbedBatches", "embed_batch", "EmbedBatchFunctionArn", (LAMBDA_RETRY, THROTTLING_RETRY, DEPENDENCY_RETRY),
    map=MapSpec("batches", "batch", ("project_id", "document_id", "generation")),
    comment="embed one batch and upsert its chunks keyed by (document, generation, chunk_index)",
)
FINALIZE = Step(
    "Finalize", "finalize", "FinalizeFunctionArn", (LAMBDA_RETRY, DEPENDENCY_RETRY),
    comment="flip active_generation to the new chunk set, drop the old one, status `ready`",
)
MARK_FAILED = Step(
    "MarkFailed", "mark_failed", "MarkFailedFunctionArn", (LAMBDA_RETRY, DEPENDENCY_RETRY),
    comment="status `failed` + the human-readable error (catch-all of every step)",
)

#: The ordered steps. The ASL and the local runner are both built from this tuple.
PIPELINE: tuple[Step, ...] = (REGISTER, EXTRACT, AWAIT_CONVERSION, CHUNK, EMBED, FINALIZE)
#: Extract and Chunk as one pass whose batches enter EmbedBatches while later pages are parsed
#: (``services.ingestion.steps.extract_and_chunk``): a long PDF's ingestion is bound by the model,
#: not the parser (docs/ingestion.md "Streaming"). A run whose converter answers ``pending`` stops
#: the pass after Extract and goes on through AwaitConversion, Chunk and EmbedBatches.
STREAMED = Streamed(producers=(EXTRACT, CHUNK), consumer=EMBED, handler="extract_and_chunk",
                    stopped_when=AWAITING_FIELD)
#: Where any step's failure goes (after its retries).
FAILURE_HANDLER: Step = MARK_FAILED
#: A payload with this field is a prepared DocumentRun (API create / re-ingest): it enters at
#: the step after Register. Anything else is an S3 event and enters at Register.
RUN_MARKER_FIELD = "document_id"
#: Where the caught error lands in the state handed to MarkFailed: ``{"Error", "Cause"}``.
FAILURE_FIELD = "failure"

#: placeholder -> handler attribute (CDK creates one Lambda per entry, handler ``handler.<attr>``).
STEP_FUNCTION_NAMES: dict[str, str] = {s.function_placeholder: s.handler for s in (*PIPELINE, FAILURE_HANDLER)}


#: The Standard machine's ARN in the Express build (the hand-off of a run awaiting a callback).
STANDARD_MACHINE_PLACEHOLDER = "StandardStateMachineArn"
HANDED_OFF_STATE = "HandedOffToStandard"


def entry_step(payload: dict[str, Any]) -> Step:
    """The step a payload enters at (the ``Route`` choice state of the ASL)."""
    if payload.get(AWAITING_FIELD) is not None:
        return AWAIT_CONVERSION
    return PIPELINE[1] if RUN_MARKER_FIELD in payload else PIPELINE[0]


def _is_set(field_name: str) -> dict[str, Any]:
    """An ASL condition: the field is present and not null."""
    return {"And": [{"Variable": f"$.{field_name}", "IsPresent": True}, {"Variable": f"$.{field_name}", "IsNull": False}]}


def _entry_state(step: Step) -> str:
    """The state a run enters ``step`` by (its condition's Choice when it has ``only_when``)."""
    return f"{step.name}Needed" if step.only_when else step.name


@dataclass
class _Builder:
    map_max_concurrency: int
    states: dict[str, Any] = field(default_factory=dict)

    def task(self, step: Step, next_state: str | None, *, catch: bool = True) -> dict[str, Any]:
        state: dict[str, Any] = {
            "Type": "Task",
            "Comment": step.comment,
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": f"${{{step.function_placeholder}}}", "Payload.$": "$"},
            "OutputPath": "$.Payload",
            "Retry": [r.to_asl() for r in step.retry],
        }
        if catch:
            state["Catch"] = [{"ErrorEquals": [CATCH_ALL], "ResultPath": f"$.{FAILURE_FIELD}", "Next": MARK_FAILED.name}]
        if next_state is None:
            state["End"] = True
        else:
            state["Next"] = next_state
        return state

    def waiting_task(self, step: Step, next_state: str) -> dict[str, Any]:
        """A ``.waitForTaskToken`` Lambda task: the function gets the run and the token; the
        state's output is what ``SendTaskSuccess`` sends."""
        state = self.task(step, next_state)
        state["Resource"] = "arn:aws:states:::lambda:invoke.waitForTaskToken"
        state["Parameters"] = {"FunctionName": f"${{{step.function_placeholder}}}",
                               "Payload": {"run.$": "$", "task_token.$": "$$.Task.Token"}}
        del state["OutputPath"]
        if step.timeout_path:
            state["TimeoutSecondsPath"] = f"$.{step.timeout_path}"
        return state

    def hand_off(self, step: Step) -> dict[str, Any]:
        """Express machines cannot wait for a task token: start the Standard machine with the run
        (its Route enters at ``step``); the name makes a repeated hand-off one execution."""
        return {
            "Type": "Task",
            "Comment": f"Express cannot wait for a task token: the Standard machine runs {step.name} and the rest",
            "Resource": "arn:aws:states:::states:startExecution",
            "Parameters": {
                "StateMachineArn": f"${{{STANDARD_MACHINE_PLACEHOLDER}}}",
                "Input.$": "$",
                "Name.$": "States.Format('{}-g{}-converted', $.document_id, $.generation)",
            },
            "Retry": [RetryPolicy(("StepFunctions.AWSStepFunctionsException", "States.TaskFailed"),
                                  interval_seconds=2, max_attempts=3).to_asl()],
            "Catch": [{"ErrorEquals": [CATCH_ALL], "ResultPath": f"$.{FAILURE_FIELD}", "Next": MARK_FAILED.name}],
            "ResultPath": None,
            "Next": HANDED_OFF_STATE,
        }

    def map_state(self, step: Step, next_state: str) -> dict[str, Any]:
        assert step.map is not None
        inner = self.task(step, None, catch=False)  # the Map's own Catch routes failures
        inner.pop("Comment")
        selector = {f"{name}.$": f"$.{name}" for name in step.map.carried_fields}
        selector[f"{step.map.item_field}.$"] = "$$.Map.Item.Value"
        return {
            "Type": "Map",
            "Comment": step.comment,
            "ItemsPath": f"$.{step.map.items_field}",
            "ItemSelector": selector,
            "MaxConcurrency": self.map_max_concurrency,
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": EMBED_ITEM_STATE,
                "States": {EMBED_ITEM_STATE: inner},
            },
            "ResultPath": None,  # batch results are in the database; the state passes through
            "Catch": [{"ErrorEquals": [CATCH_ALL], "ResultPath": f"$.{FAILURE_FIELD}", "Next": MARK_FAILED.name}],
            "Next": next_state,
        }


def build_asl(map_max_concurrency: int = DEFAULT_MAP_CONCURRENCY, timeout_seconds: int | None = None, *,
              express: bool = False) -> dict[str, Any]:
    """The state machine definition (Amazon States Language) of :data:`PIPELINE`.

    Input: the EventBridge S3 "Object Created" event (enters at Register), or a prepared
    ``DocumentRun`` with ``document_id`` (API create/re-ingest; enters at Extract), or a run
    ``awaiting_conversion`` (handed over by the Express machine; enters at AwaitConversion).
    Lambda ARNs are ``${<Step>FunctionArn}`` placeholders, see :data:`STEP_FUNCTION_NAMES`.
    ``timeout_seconds`` bounds a whole execution (CDK's ``timeout`` prop does not reach a definition
    given as a string, so it is part of the definition). ``express``: the definition for the Express
    machine, which hands a waiting step to the Standard one (``${StandardStateMachineArn}``).
    """
    if map_max_concurrency < 1:
        raise ValueError("map_max_concurrency must be >= 1")
    b = _Builder(map_max_concurrency)
    b.states[ROUTE_STATE] = {
        "Type": "Choice",
        "Comment": "a run awaiting a converter's callback waits; a prepared DocumentRun skips Register",
        "Choices": [{**_is_set(AWAITING_FIELD), "Next": AWAIT_CONVERSION.name},
                    {"Variable": f"$.{RUN_MARKER_FIELD}", "IsPresent": True, "Next": PIPELINE[1].name}],
        "Default": PIPELINE[0].name,
    }
    if express:
        b.states[HANDED_OFF_STATE] = {"Type": "Succeed", "Comment": "the Standard machine finishes this run"}
    for index, step in enumerate(PIPELINE):
        following = _entry_state(PIPELINE[index + 1]) if index + 1 < len(PIPELINE) else None
        if step.only_when is not None:
            assert following is not None
            b.states[_entry_state(step)] = {
                "Type": "Choice",
                "Choices": [{**_is_set(step.only_when), "Next": step.name}],
                "Default": following,
            }
        if step.stop_when is not None:
            flag, stop_state = step.stop_when
            check = f"{step.name}Skip"
            b.states[step.name] = b.task(step, check)
            b.states[check] = {
                "Type": "Choice",
                "Choices": [{"Variable": f"$.{flag}", "BooleanEquals": True, "Next": stop_state}],
                "Default": following,
            }
            b.states[stop_state] = {"Type": "Succeed", "Comment": "nothing to do (same content already ingested)"}
        elif step.map is not None:
            assert following is not None
            b.states[step.name] = b.map_state(step, following)
        elif step.waits_for_token:
            assert following is not None
            b.states[step.name] = b.hand_off(step) if express else b.waiting_task(step, following)
        else:
            b.states[step.name] = b.task(step, following)
    failed = b.task(FAILURE_HANDLER, FAILED_STATE, catch=False)
    b.states[FAILURE_HANDLER.name] = failed
    b.states[FAILED_STATE] = {"Type": "Fail", "Error": "IngestionFailed", "Cause": "see the document's `error` field"}
    definition: dict[str, Any] = {
        "Comment": "memory-engine document ingestion: register -> extract -> [await conversion] -> chunk -> embed -> finalize",
        "StartAt": ROUTE_STATE,
        "States": b.states,
    }
    if timeout_seconds is not None:
        definition["TimeoutSeconds"] = timeout_seconds
    return definition
