"""Every example of docs/integrations.md runs as written against the live engine (the client reads
``MEMORY_ENGINE_URL`` / ``MEMORY_ENGINE_API_KEY``); where an example names a real model in its
``MODEL = ...`` line, that one line is swapped for a scripted model of the same framework."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from agents import set_tracing_disabled

from memory_engine_client import MemoryEngineClient
from tests.support.engine import RunningEngine
from tests.support.scripted_models import ScriptedAgentsModel, ScriptedStrandsModel, call, say

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
set_tracing_disabled(True)


def examples() -> dict[str, str]:
    """The first python block under each ``## Heading``."""
    out: dict[str, str] = {}
    for section in re.split(r"^## ", DOC.read_text(), flags=re.MULTILINE)[1:]:
        title, _, body = section.partition("\n")
        block = re.search(r"```python\n(.*?)```", body, flags=re.DOTALL)
        if block:
            out[title.strip()] = block.group(1)
    return out


def _run(code: str, model: Any = None) -> None:
    if model is not None:
        code, swapped = re.subn(r"^MODEL = .*$", "MODEL = __model__", code, flags=re.MULTILINE)
        assert swapped == 1, "the example must name its model in one `MODEL = ...` line"
    exec(compile(code, str(DOC), "exec"), {"__name__": "__example__", "__model__": model})  # our own docs, run as written


@pytest.fixture(autouse=True)
def _environment(engine: RunningEngine, api_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_ENGINE_URL", engine.base_url)
    monkeypatch.setenv("MEMORY_ENGINE_API_KEY", api_key)


def test_every_framework_has_an_example() -> None:
    # CrewAI's runs in its own virtualenv: tests/integrations/test_crewai.py
    assert set(examples()) == {"OpenAI Agents SDK", "LangGraph", "LlamaIndex", "Strands Agents", "CrewAI"}


def test_the_openai_agents_example(client: MemoryEngineClient, capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedAgentsModel([call("write_memory", 1, fact="The user moved to Lisbon."), say("Noted.", 2)])
    _run(examples()["OpenAI Agents SDK"], model)
    out = capsys.readouterr().out
    assert out.startswith("Noted. [{'role': 'user', 'content': 'I moved to Lisbon; remember it.'}")
    assert any(e.content == "The user moved to Lisbon." for e in client.iter_entries())


def test_the_langgraph_example(capsys: pytest.CaptureFixture[str]) -> None:
    _run(examples()["LangGraph"])
    lines = capsys.readouterr().out.splitlines()
    assert "Sam is vegetarian." in lines[0]
    assert " diet {'text': 'Sam is vegetarian.'}" in lines[1]
    assert ("users", "sam", "memories") in ast.literal_eval(lines[-1])


def test_the_llamaindex_example(capsys: pytest.CaptureFixture[str]) -> None:
    _run(examples()["LlamaIndex"])
    assert "The Lisbon office opens at 8 am." in capsys.readouterr().out


def test_the_strands_example(client: MemoryEngineClient, capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedStrandsModel([{"tool": "add_memory", "id": "t1", "input": {"entries": ["The user is vegetarian."]}},
                                  {"text": "I will remember that."}])
    _run(examples()["Strands Agents"], model)
    assert "I will remember that." in capsys.readouterr().out
    assert any(e.content == "The user is vegetarian." for e in client.iter_entries())
