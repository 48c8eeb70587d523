"""Drives the CrewAI adapter through CrewAI's own ``Memory`` (run in .venv-crewai by test_crewai.py,
against the engine named by MEMORY_ENGINE_URL / MEMORY_ENGINE_API_KEY); prints what it saw as JSON."""

from __future__ import annotations

import json
from typing import Any

from crewai import Memory
from crewai.llms.base_llm import BaseLLM

from memory_engine_client import MemoryEngineClient
from memory_engine_client.integrations.crewai import EngineEmbedder, MemoryEngineStorage


class NoLLM(BaseLLM):
    """Memory builds its analysis LLM eagerly; with every field given and shallow recall it must not call it."""

    def call(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no LLM call expected: every field is given and recall is shallow")


def main() -> None:
    client = MemoryEngineClient()
    record = client.create_memory("crewai")
    storage = MemoryEngineStorage(client, memory_id=record.id)
    memory = Memory(storage=storage, embedder=EngineEmbedder(client), llm=NoLLM(model="none"))
    saved = memory.remember("We decided to use PostgreSQL for the user database.", scope="/project/alpha",
                            categories=["decision"], importance=0.9, metadata={"team": "data"})
    memory.remember("The design review is on Friday afternoon.", scope="/project/beta", categories=["meeting"],
                    importance=0.4)
    matches = memory.recall("Which database did we choose?", limit=2, depth="shallow")
    scoped = memory.recall("Which database did we choose?", scope="/project/beta", limit=2, depth="shallow")
    out = {
        "memory_id": record.id, "saved_id": saved.id if saved else None,
        "recalled": [[match.record.content, match.score, match.record.scope] for match in matches],
        "scoped": [match.record.content for match in scoped],
        "got": storage.get_record(saved.id).content if saved and storage.get_record(saved.id) else None,
        "count": storage.count(), "count_alpha": storage.count("/project/alpha"),
        "scopes": storage.list_scopes("/project"), "categories": storage.list_categories(),
        "listed": [r.content for r in storage.list_records()],
    }
    memory.forget(scope="/project/beta")
    out["after_forget"] = [r.content for r in storage.list_records()]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
