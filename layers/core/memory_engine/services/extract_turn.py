"""Use case: turn one ``turn.completed`` event into an episode and atomic facts.

    claim the run (event id = idempotency key; completed -> nothing to do)
      -> store the episode (transcript, embedded best-effort; unique per event)
      -> unless extract is false: ask the chat model for a JSON array of facts
      -> parse leniently, cap at 20
      -> write each through the write funnel with the agent context (merge / supersede apply)
      -> record the summary on the run -> publish memory.extraction.completed

A model failure never loses the turn: the episode is stored first and the run is recorded as
failed with the error. :func:`consume_turn_event` turns the outcome into the delivery policy:
retryable failures raise (the queue redelivers, then dead-letters); permanent ones do not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from pydantic import ValidationError

from memory_engine import constants as c
from memory_engine.domain.entries import EntityRef, NewEntry
from memory_engine.domain.events import ExtractionCompletedDetail, ExtractionSummary, TurnCompletedEvent
from memory_engine.domain.extraction import (
    MAX_FACTS,
    CandidateFact,
    build_system_prompt,
    build_transcript,
    build_user_message,
    parse_facts,
)
from memory_engine.domain.write_decision import AgentContext
from memory_engine.errors import (
    ChatModelError,
    ChatModelNotConfigured,
    DependencyError,
    InvalidInput,
    MemoryEngineError,
    NotFound,
    PayloadTooLarge,
)
from memory_engine.ports.chat import ChatMessage, ChatModel
from memory_engine.ports.embedder import Embedder
from memory_engine.ports.entries import EntryRepository
from memory_engine.ports.episodes import Episode, EpisodeRepository, NewEpisode
from memory_engine.ports.events import EventPublisher
from memory_engine.ports.extraction_runs import ClaimOutcome, ExtractionRun, ExtractionRunRepository, RunKey
from memory_engine.prompts import extraction_prompt
from memory_engine.services.turns import embed_windows, read_turns_before
from memory_engine.services.write_entry import WriteResult, write_entry

logger = logging.getLogger(__name__)

NO_MODEL_ERROR = "no model configured"


class RunInProgress(DependencyError, code="extraction_in_progress"):
    """Another worker is running this event's extraction right now; deliver it again later."""


class InvalidEvent(InvalidInput, code="invalid_event"):
    """An event that can never be processed (bad JSON or schema, unknown memory): dead-letter it."""


class ExtractionFailed(DependencyError, code="extraction_failed"):
    """The run failed in a way another attempt may fix (model error or timeout, database)."""


@dataclass(frozen=True)
class ExtractionSettings:
    """``model_timeout`` bounds the extraction call (seconds); ``stale_after`` is how long a
    ``running`` run may go untouched before another delivery takes it over (its worker died)."""

    model_timeout: float = 60.0
    merge_timeout: float = 20.0
    max_tokens: int = 4096
    max_facts: int = MAX_FACTS
    stale_after: timedelta = timedelta(minutes=15)
    #: Seconds kept in reserve before the deadline to record the run (and publish) cleanly.
    reserve: float = 5.0
    #: A model call given less time than this is not started.
    min_model_seconds: float = 5.0


@dataclass
class ExtractionDeps:
    episodes: EpisodeRepository
    runs: ExtractionRunRepository
    entries: EntryRepository
    embedder: Embedder
    chat: ChatModel
    publisher: EventPublisher
    settings: ExtractionSettings = field(default_factory=ExtractionSettings)
    clock: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class RunResult:
    """``status`` ``duplicate``: the event's run had already completed and nothing was done.
    ``retryable`` says whether a failed run should be delivered again."""

    status: Literal["completed", "failed", "duplicate"]
    run: ExtractionRun
    summary: ExtractionSummary
    episode: Episode | None = None
    error: str | None = None
    retryable: bool = False
    results: list[WriteResult] = field(default_factory=list)


class _RunFailed(Exception):
    def __init__(self, error: str, *, retryable: bool) -> None:
        super().__init__(error)
        self.error = error
        self.retryable = retryable


def extract_turn(event: TurnCompletedEvent, deps: ExtractionDeps, *, deadline: float | None = None) -> RunResult:
    """Run (or re-run) the extraction of one event; see the module docstring.

    ``deadline`` (a ``deps.clock()`` value, e.g. from the Lambda's remaining time) bounds the run:
    the model call gets at most the time left, and facts not written in time fail the run as
    retryable (a redelivery skips the facts already written and writes the rest).
    Returns the run's result; a failed run is returned, not raised, with ``retryable`` set.
    Raises NotFound when the memory is not in the project (the event can never succeed),
    RunInProgress when another worker holds the run, DatabaseError when the run cannot be claimed.
    """
    detail = event.detail
    claim = deps.runs.claim(
        RunKey(detail.project_id, event.id, detail.memory_id, detail.conversation_id, detail.turn_id),
        stale_after=deps.settings.stale_after,
    )
    if claim.outcome is ClaimOutcome.ALREADY_COMPLETED:
        logger.info("event %s already extracted by run %s; nothing to do", event.id, claim.run.id)
        return RunResult("duplicate", claim.run, ExtractionSummary(**_summary_fields(claim.run.summary)))
    if claim.outcome is ClaimOutcome.IN_PROGRESS:
        raise RunInProgress(f"extraction run {claim.run.id} of event {event.id} is in progress in another worker")
    run = claim.run
    summary = ExtractionSummary(prompt_version=None if detail.extraction_prompt else extraction_prompt().version)
    episode: Episode | None = None
    results: list[WriteResult] = []
    try:
        episode = _store_episode(event, deps)
        deps.runs.attach_episode(detail.project_id, run.id, episode.id)
        if detail.extract:
            results = _extract_facts(event, episode, deps, summary, deadline)
        else:
            summary.extract = False
    except _RunFailed as failure:
        return _finish_failed(event, deps, run, summary, episode, failure.error, retryable=failure.retryable)
    except NotFound as error:  # the memory was deleted mid-run
        return _finish_failed(event, deps, run, summary, episode, error.message, retryable=False)
    except MemoryEngineError as error:
        return _finish_failed(event, deps, run, summary, episode, error.message, retryable=True)
    except Exception as error:
        _finish_failed(event, deps, run, summary, episode, f"{type(error).__name__}: {error}", retryable=True)
        raise
    finished = deps.runs.finish(detail.project_id, run.id, status="completed", summary=summary.model_dump())
    _publish(event, deps, finished, summary, episode)
    return RunResult("completed", finished, summary, episode, results=results)


def consume_turn_event(event: TurnCompletedEvent, deps: ExtractionDeps, *, deadline: float | None = None) -> RunResult:
    """The queue consumer's policy around :func:`extract_turn`.

    Raises ExtractionFailed for a retryable failed run (model error or timeout, database), and
    RunInProgress / DatabaseError from the claim, so the queue redelivers and finally dead-letters.
    Raises NotFound for an event that can never succeed (unknown memory); the caller rejects it.
    A run failed for lack of a model is returned, not raised: retrying cannot help.
    """
    result = extract_turn(event, deps, deadline=deadline)
    if result.status == "failed" and result.retryable:
        raise ExtractionFailed(f"extraction of event {event.id} failed (attempt {result.run.attempts}): {result.error}")
    return result


def _store_episode(event: TurnCompletedEvent, deps: ExtractionDeps) -> Episode:
    detail = event.detail
    transcript = build_transcript(detail.messages)
    windows = embed_windows(deps.embedder, [transcript])[0]
    episode, created = deps.episodes.store(
        NewEpisode(
            project_id=detail.project_id, memory_id=detail.memory_id, conversation_id=detail.conversation_id,
            turn_id=detail.turn_id, event_id=event.id, occurred_at=detail.occurred_at, transcript=transcript,
            messages=[m.model_dump(exclude_none=True) for m in detail.messages],
        ),
        windows,
    )
    if not created and not episode.has_embedding and windows:
        deps.episodes.set_windows(detail.project_id, episode.id, windows)  # an earlier attempt could not embed
    read_turns_before(deps.episodes, deps.embedder, detail.project_id, [episode.id])  # none when it has it already
    return episode


def _time_left(deps: ExtractionDeps, deadline: float | None) -> float:
    return float("inf") if deadline is None else deadline - deps.clock() - deps.settings.reserve


def _extract_facts(
    event: TurnCompletedEvent, episode: Episode, deps: ExtractionDeps, summary: ExtractionSummary,
    deadline: float | None,
) -> list[WriteResult]:
    detail = event.detail
    prompt = extraction_prompt()
    system = build_system_prompt(detail.extraction_prompt or prompt.task, prompt.contract)
    user = build_user_message(episode.transcript, detail.occurred_at)
    budget = min(deps.settings.model_timeout, _time_left(deps, deadline))
    if budget < deps.settings.min_model_seconds:
        raise _RunFailed(f"only {max(budget, 0):.1f}s left for the model call; retrying later", retryable=True)
    try:
        reply = deps.chat.complete(
            [ChatMessage("user", user)], system=system, model=detail.extraction_model,
            max_tokens=deps.settings.max_tokens, timeout=budget,
        )
    except ChatModelNotConfigured as error:
        raise _RunFailed(NO_MODEL_ERROR, retryable=False) from error
    except ChatModelError as error:
        raise _RunFailed(f"chat model failed: {error.message}", retryable=True) from error
    except Exception as error:  # a misbehaving adapter is still a model failure, not a lost turn
        raise _RunFailed(f"chat model failed: {type(error).__name__}: {error}", retryable=True) from error

    parsed = parse_facts(reply, limit=deps.settings.max_facts)
    if not parsed.found_array:
        logger.warning("extraction reply for event %s holds no JSON array: %.200r", event.id, reply)
    summary.candidates = len(parsed.facts)
    summary.discarded = parsed.discarded
    agent = AgentContext(model=detail.extraction_model, timeout=deps.settings.merge_timeout)
    results: list[WriteResult] = []
    for index, fact in enumerate(parsed.facts):
        if _time_left(deps, deadline) < deps.settings.merge_timeout:
            # a write may ask the model to merge: stop while the run can still be recorded
            raise _RunFailed(
                f"time budget exhausted after {index} of {len(parsed.facts)} facts; the rest is retried", retryable=True
            )
        try:
            entry = _new_entry(event, fact)
            result = write_entry(deps.entries, deps.embedder, deps.chat, project_id=detail.project_id, entry=entry,
                                 agent=agent)
        except (ValidationError, InvalidInput, PayloadTooLarge) as error:
            logger.info("extracted fact rejected by the write funnel: %s", error)
            summary.discarded += 1
            continue
        results.append(result)
        setattr(summary, result.action, getattr(summary, result.action) + 1)
    return results


def _new_entry(event: TurnCompletedEvent, fact: CandidateFact) -> NewEntry:
    detail = event.detail
    return NewEntry(
        memory_id=detail.memory_id,
        content=fact.content,
        source_type="extraction",
        subject=fact.subject,
        predicate=fact.predicate,
        object=fact.object,
        entities=[EntityRef(name=e.name, type=e.type) for e in fact.entities],
        confidence=fact.confidence,
        valid_from=fact.valid_from,
        source_quote=fact.source_quote,
        source_conversation_id=detail.conversation_id,
        source_generation_id=detail.turn_id,
        source_event_id=event.id,
    )


def _finish_failed(
    event: TurnCompletedEvent, deps: ExtractionDeps, run: ExtractionRun, summary: ExtractionSummary,
    episode: Episode | None, error: str, *, retryable: bool,
) -> RunResult:
    level = logging.WARNING if retryable else logging.INFO
    logger.log(level, "extraction of event %s failed (attempt %d): %s", event.id, run.attempts, error)
    try:
        finished = deps.runs.finish(
            event.detail.project_id, run.id, status="failed", summary=summary.model_dump(), error=error[:4000]
        )
    except MemoryEngineError:
        # the run stays 'running' and is taken over once stale; the delivery is retried meanwhile
        logger.exception("could not record the failed run %s", run.id)
        return RunResult("failed", run, summary, episode, error, retryable=True)
    _publish(event, deps, finished, summary, episode)
    return RunResult("failed", finished, summary, episode, error, retryable=retryable)


def _publish(
    event: TurnCompletedEvent, deps: ExtractionDeps, run: ExtractionRun, summary: ExtractionSummary,
    episode: Episode | None,
) -> None:
    """Best effort: the run is recorded already, so a bus failure is logged, not retried (a retry
    would find the run completed and do nothing)."""
    detail = event.detail
    body = ExtractionCompletedDetail(
        project_id=detail.project_id, memory_id=detail.memory_id, conversation_id=detail.conversation_id,
        turn_id=detail.turn_id, event_id=event.id, run_id=run.id, episode_id=episode.id if episode else None,
        status="completed" if run.status == "completed" else "failed", summary=summary, error=run.error,
        attempts=run.attempts,
    )
    try:
        deps.publisher.publish(c.DETAIL_TYPE_EXTRACTION_COMPLETED, body.model_dump(mode="json"))
    except MemoryEngineError:
        logger.exception("could not publish %s for run %s", c.DETAIL_TYPE_EXTRACTION_COMPLETED, run.id)


def _summary_fields(stored: dict[str, Any] | None) -> dict[str, Any]:
    known = ExtractionSummary.model_fields
    return {k: v for k, v in (stored or {}).items() if k in known}
