"""The OpenAI Agents SDK (``openai-agents``) on memory-engine: a ``Session`` and memory tools.

``MemoryEngineSession`` implements the SDK's ``Session`` protocol over one memory's conversation
turns (``/v1/memories/{id}/turns``; the session id is the ``conversation_id``): every item the runner
adds becomes one turn, in order, and ``get_items`` gives back exactly the items added. The turn keeps
the item's readable text as ``content`` (what episode search and fact extraction read) and the item
itself in ``metadata``; an item too large for metadata (64 KB) is kept whole as JSON in ``content``.
Message roles map onto turn roles (``developer`` -> ``system``); tool calls, tool outputs, reasoning
and every other item type are ``tool`` turns, so ``extract=True`` mines only what the user and the
assistant said.

``memory_tools`` gives the agent ``search_memory`` (hybrid search over the memory) and
``write_memory`` (the agent write path: near-duplicates merge, contradictions supersede).

    session = MemoryEngineSession("conv-42", memory_id=memory.id, client=client)
    agent = Agent(name="assistant", tools=memory_tools(client, memory.id))
    await Runner.run(agent, "Where do I live?", session=session)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents import FunctionTool, function_tool

from memory_engine_client.async_client import AsyncMemoryEngineClient
from memory_engine_client.errors import NotFoundError
from memory_engine_client.integrations._common import results_text, turn_batches

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings

    from memory_engine_client import models as m

#: Turns read per page.
BATCH = 100
#: An item whose JSON is longer than this is kept in ``content`` (turn metadata holds 64 KB).
MAX_METADATA_CHARS = 60_000
#: The metadata key of the stored item; ``ITEM_IN_CONTENT`` marks an item kept as JSON in ``content``.
ITEM_KEY = "openai_agents_item"
ITEM_IN_CONTENT = "openai_agents_item_in_content"
#: With a string ``content``, the item is stored without it and ``content`` is the turn's.
TEXT_IN_CONTENT = "openai_agents_text_in_content"

_MESSAGE_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


class MemoryEngineSession:
    """A ``Session`` (``agents.memory.Session``) whose items are the turns of ``session_id`` in
    ``memory_id``. ``extract=True`` sends each new user/assistant turn to fact extraction (when the
    engine has a chat model), so what was said also becomes searchable facts."""

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, *, memory_id: str, client: AsyncMemoryEngineClient, extract: bool = False,
                 session_settings: SessionSettings | None = None) -> None:
        self.session_id = session_id
        self.memory_id = memory_id
        self.extract = extract
        self.session_settings = session_settings
        self._client = client

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Every item oldest first, or the latest ``limit`` of them (still oldest first)."""
        if limit is None:
            return [item_of(turn) async for turn in self._client.iter_turns(self.memory_id, self.session_id)]
        newest: list[m.Turn] = []
        cursor: str | None = None
        while len(newest) < limit:
            page = await self._client.list_turns(self.memory_id, self.session_id, order="desc",
                                                 limit=min(BATCH, limit - len(newest)), cursor=cursor)
            newest += page.data
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        return [item_of(turn) for turn in reversed(newest)]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        for batch in turn_batches([turn_of(item) for item in items]):
            await self._client.record_turns(self.memory_id, self.session_id, batch, extract=self.extract or None)

    async def pop_item(self) -> TResponseInputItem | None:
        for _ in range(3):  # another worker may pop the same item first: take the next one then
            page = await self._client.list_turns(self.memory_id, self.session_id, order="desc", limit=1)
            if not page.data:
                return None
            turn = page.data[0]
            try:
                await self._client.delete_turn(self.memory_id, turn.turn_id or "", conversation_id=self.session_id)
            except NotFoundError:
                continue
            return item_of(turn)
        return None

    async def clear_session(self) -> None:
        await self._client.delete_conversation_turns(self.memory_id, self.session_id)


def turn_of(item: Mapping[str, Any]) -> dict[str, Any]:
    """The turn that stores ``item`` (see the module's docstring)."""
    item = dict(item)
    is_message = item.get("type", "message") == "message" and item.get("role") in _MESSAGE_ROLES
    role = _MESSAGE_ROLES[item["role"]] if is_message else "tool"
    turn: dict[str, Any] = {"turn_id": uuid.uuid4().hex, "role": role}
    content = item.get("content")
    if isinstance(content, str) and content.strip():
        rest = {k: v for k, v in item.items() if k != "content"}
        return {**turn, "content": content, "metadata": {ITEM_KEY: rest, TEXT_IN_CONTENT: True}}
    whole = json.dumps(item, ensure_ascii=False)
    if len(whole) > MAX_METADATA_CHARS:
        return {**turn, "content": whole, "metadata": {ITEM_IN_CONTENT: True}}
    return {**turn, "content": _text(item) or whole, "metadata": {ITEM_KEY: item}}


def item_of(turn: m.Turn) -> TResponseInputItem:
    """The item a turn stores; a turn written some other way (another client, a ``turn.completed``
    event) reads as an easy input message ``{role, content}``."""
    meta = turn.metadata or {}
    if meta.get(ITEM_IN_CONTENT):
        return json.loads(turn.content)  # type: ignore[no-any-return]
    if ITEM_KEY in meta:
        item = dict(meta[ITEM_KEY])
        if meta.get(TEXT_IN_CONTENT):
            item["content"] = turn.content
        return item  # type: ignore[return-value]
    role = turn.role if turn.role in ("user", "assistant", "system") else "user"
    return {"role": role, "content": turn.content}


def _text(item: Mapping[str, Any]) -> str:
    """The readable text of a non-string-content item: message parts, a tool call, a tool output."""
    content = item.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text") or part.get("refusal") or "") for part in content
                         if isinstance(part, Mapping)).strip()
    if item.get("type") == "function_call":
        return f"{item.get('name')}({item.get('arguments', '')})"
    output = item.get("output")
    if isinstance(output, str):
        return output.strip()
    return ""


def memory_tools(client: AsyncMemoryEngineClient, memory_id: str, *, limit: int = 5,
                 model: str | None = None) -> list[FunctionTool]:
    """``search_memory`` and ``write_memory`` over ``memory_id``, for ``Agent(tools=...)``.
    ``model`` names the agent's model in the write's agent context."""

    @function_tool
    async def search_memory(query: str) -> str:
        """Search long-term memory for facts about the user and past conversations.

        Args:
            query: What to look for, in a few words or a question.
        """
        return results_text(await client.search(query, memory_ids=[memory_id], limit=limit))

    @function_tool
    async def write_memory(fact: str) -> str:
        """Record one durable fact worth remembering in later conversations (a preference, a plan, a name).

        Args:
            fact: One self-contained sentence, e.g. "Sam prefers window seats."
        """
        agent = {"model": model} if model else None
        written = await client.write_entry(memory_id, fact, source_type="agent",
                                           **({"agent": agent} if agent else {}))
        return f"{written.action}: {written.content}"

    return [search_memory, write_memory]
