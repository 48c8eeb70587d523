"""Scripted models for the framework adapter tests: each framework's own model interface, answering
from a script (no network) and recording what it was sent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agents import Model, ModelResponse, Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from strands.models import Model as StrandsModel


class ScriptedAgentsModel(Model):
    """An OpenAI Agents SDK ``Model`` answering from a script: each call pops the next output and records its input."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = list(script)
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append([dict(i) for i in input] if isinstance(input, list) else [{"role": "user", "content": input}])
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run the non-streaming path")


def say(text: str, n: int) -> list[Any]:
    return [ResponseOutputMessage(id=f"msg_{n}", type="message", role="assistant", status="completed",
                                  content=[ResponseOutputText(type="output_text", text=text, annotations=[])])]


def call(tool: str, n: int, **arguments: str) -> list[Any]:
    return [ResponseFunctionToolCall(id=f"fc_{n}", call_id=f"call_{n}", type="function_call", name=tool,
                                     arguments=json.dumps(arguments))]


class ScriptedStrandsModel(StrandsModel):
    """A Strands ``Model`` streaming scripted replies (a text or a tool use) and recording its input."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = list(script)
        self.inputs: list[str] = []

    def update_config(self, **model_config: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None,
                     **kwargs: Any) -> AsyncIterator[Any]:
        self.inputs.append(json.dumps({"system": system_prompt, "messages": messages}, default=str))
        reply = self.script.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if "tool" in reply:
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": reply["id"], "name": reply["tool"]}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(reply["input"])}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": reply["text"]}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
