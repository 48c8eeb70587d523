"""The CrewAI adapter through CrewAI's own ``Memory`` (remember, recall, forget) against the live
engine, run in CrewAI's own virtualenv (tests/support/crewai_env.py: CrewAI pins ``openai<3``, the
main environment's OpenAI Agents SDK needs ``openai>=3``): what CrewAI saves is in
``GET /v1/memory-entries``, and recall comes back from the engine's vector search, ranked."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from memory_engine_client import MemoryEngineClient
from tests.integrations.test_docs_examples import examples
from tests.support.crewai_env import crewai_python
from tests.support.engine import RunningEngine

DRIVER = Path(__file__).with_name("crewai_driver.py")


def _run(engine: RunningEngine, api_key: str, *args: str) -> str:
    env = {**os.environ, "MEMORY_ENGINE_URL": engine.base_url, "MEMORY_ENGINE_API_KEY": api_key,
           "CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true", "CREWAI_TRACING_ENABLED": "false"}
    done = subprocess.run([str(crewai_python()), *args], env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_crewai_memory_remembers_recalls_and_forgets_through_the_engine(
        engine: RunningEngine, api_key: str, client: MemoryEngineClient) -> None:
    out = json.loads(_run(engine, api_key, str(DRIVER)).strip().splitlines()[-1])

    database = "We decided to use PostgreSQL for the user database."
    review = "The design review is on Friday afternoon."
    assert out["recalled"][0][0] == database and out["recalled"][0][2] == "/project/alpha"
    assert out["scoped"] == [review]
    assert out["got"] == database and out["count"] == 2 and out["count_alpha"] == 1
    assert out["scopes"] == ["/project/alpha", "/project/beta"]
    assert out["categories"] == {"decision": 1, "meeting": 1}
    assert sorted(out["listed"]) == sorted([database, review]) and out["after_forget"] == [database]
    entries = client.list_entries(memory_id=out["memory_id"]).data
    assert [(e.content, e.tags, e.metadata["crewai"]["id"]) for e in entries] == [
        (database, ["cat:decision"], out["saved_id"])]


def test_the_docs_example(engine: RunningEngine, api_key: str) -> None:
    code, swapped = re.subn(r"^LLM = .*$", "from crewai_driver import NoLLM\nLLM = NoLLM(model='none')",
                            examples()["CrewAI"], flags=re.MULTILINE)
    assert swapped == 1
    printed = _run(engine, api_key, "-c", f"import sys; sys.path.insert(0, {str(DRIVER.parent)!r})\n{code}")
    assert "/project/alpha We chose PostgreSQL for the user database." in printed
