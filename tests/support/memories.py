"""Fakes and helpers for the memories / write-funnel tests (fakes subclass the ports)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory_engine.bootstrap import Container
from memory_engine.domain.entries import NewEntry
from memory_engine.domain.write_decision import DEFAULT_DUPLICATE_THRESHOLD, AgentContext
from memory_engine.errors import ChatModelError, EmbeddingError
from memory_engine.ports.chat import ChatModel, ChatRequest
from memory_engine.ports.embedder import Embedder, EmbeddingKind
from memory_engine.services.write_entry import WriteResult, write_entry


def write(container: Container, *, project_id: str, entry: NewEntry,
          duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD, agent: AgentContext | None = None) -> WriteResult:
    """The write funnel with the container's adapters, as the routes call it."""
    return write_entry(container.entries, container.embedder, container.chat_model, project_id=project_id, entry=entry,
                       duplicate_threshold=duplicate_threshold, agent=agent)


class ScriptedChat(ChatModel):
    """Answers with ``reply`` (a string, an exception to raise, or a callable run first)."""

    model_id = "scripted"

    def __init__(self) -> None:
        self.reply: str | BaseException = ChatModelError("no reply scripted")
        self.before_reply: Callable[[], None] | None = None
        self.calls: list[dict[str, object]] = []

    def script(self, reply: str | BaseException, before_reply: Callable[[], None] | None = None) -> None:
        self.reply, self.before_reply, self.calls = reply, before_reply, []

    def _complete(self, request: ChatRequest) -> str:
        self.calls.append({"messages": request.messages, "system": request.system, "model": request.model,
                           "timeout": request.timeout})
        if self.before_reply is not None:
            self.before_reply()
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply


class FailingEmbedder(Embedder):
    """An embedding model that is down."""

    dimensions = 384
    model_id = "failing"

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        raise EmbeddingError("embedding model unavailable (test)")


#: Fact pairs close enough for the funnel's merge/supersede band (0.75..0.95) with the local model.
ALLERGY = "The user is allergic to peanuts."
ALLERGY_MORE = "The user is allergic to peanuts and shellfish."  # cosine ~0.86 with ALLERGY
BLUE = "Bob's favourite colour is blue."
GREEN = "Bob's favourite colour is green."  # cosine ~0.85 with BLUE
