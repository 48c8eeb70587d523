"""The ChatModel port: one tool-less completion at temperature 0."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["user", "assistant"]
    content: str


class ChatModel(ABC):
    """A chat model used for merge/supersede decisions and fact extraction.

    Implementations call the model with temperature 0 and no tools, and return the text of
    the reply. They raise :class:`memory_engine.errors.ChatModelError` on any failure
    (transport, throttling, timeout, empty reply) so callers can degrade deterministically.
    """

    #: The model id used when ``complete`` gets no ``model``.
    model_id: str
    #: False only for :class:`NoChatModel`: callers say "no model configured" instead of trying.
    available: bool = True

    @abstractmethod
    def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 30.0,
    ) -> str:
        """Return the model's reply text (never blank: a blank reply raises ChatModelError)."""


class NoChatModel(ChatModel):
    """The local default: no model configured. Every call raises ChatModelNotConfigured."""

    model_id = ""
    available = False

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 30.0,
    ) -> str:
        from memory_engine.errors import ChatModelNotConfigured

        raise ChatModelNotConfigured("no model configured (set CHAT_PROVIDER to bedrock or openai)")
