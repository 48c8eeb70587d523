"""Use case: the one model call on the read path, ``include: ["synthesis"]`` of a search.

The chat model gets the page's results as the rendered ``<knowledge>`` block and answers short prose
(domain/synthesis.py). It never replaces the results: when no model is configured or the call fails,
there is no synthesis and the search lists why in ``degraded``; nothing matched means no call at all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from memory_engine.domain.render import render
from memory_engine.domain.search_models import AnyResult, Synthesis
from memory_engine.domain.synthesis import (
    SYNTHESIS_MAX_TOKENS,
    SYNTHESIS_SYSTEM_PROMPT,
    SYNTHESIS_TIMEOUT,
    clean_synthesis,
    synthesis_user_message,
)
from memory_engine.errors import ChatModelError
from memory_engine.ports.chat import ChatMessage, ChatModel

logger = logging.getLogger(__name__)

SYNTHESIS_NO_MODEL = "synthesis: no chat model configured"
SYNTHESIS_FAILED = "synthesis: the chat model did not answer usably"


def synthesize_results(
    chat: ChatModel | None,
    query: str | None,
    results: Sequence[AnyResult],
    *,
    timeout: float = SYNTHESIS_TIMEOUT,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Synthesis | None, str | None]:
    """``(synthesis, None)``, or ``(None, degraded note)`` when there is no model or it failed.

    Never raises: a model failure (ChatModelError or anything unexpected) is a degraded search,
    not a failed one.
    """
    if not results:
        return Synthesis(text="", model=None, latency_ms=0), None
    if chat is None or not chat.available:
        return None, SYNTHESIS_NO_MODEL
    started = clock()
    try:
        reply = chat.complete(
            [ChatMessage("user", synthesis_user_message(query, render(list(results))))],
            system=SYNTHESIS_SYSTEM_PROMPT, max_tokens=SYNTHESIS_MAX_TOKENS, timeout=timeout,
        )
    except ChatModelError as error:
        logger.info("synthesis unavailable (%s)", error.code)
        return None, SYNTHESIS_FAILED
    except Exception:
        logger.exception("chat model raised unexpectedly during synthesis")
        return None, SYNTHESIS_FAILED
    latency_ms = max(0, round((clock() - started) * 1000))
    text = clean_synthesis(reply)
    if text is None:
        return None, SYNTHESIS_FAILED
    return Synthesis(text=text, model=chat.model_id or None, latency_ms=latency_ms), None
