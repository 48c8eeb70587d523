"""The ChatModel port: one tool-less completion at temperature 0."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """One completion as :meth:`ChatModel.complete` hands it to the backend: ``model`` is the
    caller's override (``None``: the adapter's ``model_id``), ``timeout`` in seconds."""

    messages: Sequence[ChatMessage]
    system: str | None = None
    model: str | None = None
    max_tokens: int = 1024
    timeout: float = 30.0


class ChatModel(ABC):
    """A chat model used for merge/supersede decisions, fact extraction and result synthesis.

    Template method: adapters implement :meth:`_complete`, the backend call with temperature 0
    and no tools; :meth:`complete` refuses a blank reply. Both raise
    :class:`memory_engine.errors.ChatModelError` on any failure (transport, throttling,
    timeout, empty reply) so callers can degrade deterministically.
    """

    #: The model id used when ``complete`` gets no ``model``.
    model_id: str
    #: False only for :class:`NoChatModel`: callers say "no model configured" instead of trying.
    available: bool = True

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        system: str | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 30.0,
    ) -> str:
        """Return the model's reply text (never blank: a blank reply raises ChatModelError)."""
        from memory_engine.errors import ChatModelError

        text = self._complete(ChatRequest(messages, system, model, max_tokens, timeout))
        if not text.strip():
            raise ChatModelError(f"chat model {model or self.model_id} returned an empty reply")
        return text

    @abstractmethod
    def _complete(self, request: ChatRequest) -> str:
        """The reply text of one backend call."""


class NoChatModel(ChatModel):
    """The local default: no model configured. Every call raises ChatModelNotConfigured."""

    model_id = ""
    available = False

    def _complete(self, request: ChatRequest) -> str:
        from memory_engine.errors import ChatModelNotConfigured

        raise ChatModelNotConfigured("no model configured (set CHAT_PROVIDER to bedrock or openai)")
