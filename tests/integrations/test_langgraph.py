"""The LangGraph store adapter through LangGraph's own API (``BaseStore`` methods, their async forms,
and a compiled graph whose node writes through the injected store) against a live engine: what
LangGraph puts is an entry in ``GET /v1/memory-entries``; what the engine holds comes back through
``get`` and ``search`` (hybrid search, ranked, with scores)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from memory_engine_client import MemoryEngineClient
from memory_engine_client.integrations.langgraph import NOT_INDEXED, MemoryEngineStore

U1 = ("users", "u1", "memories")
U2 = ("users", "u2", "memories")


@pytest.fixture
def store(client: MemoryEngineClient) -> MemoryEngineStore:
    return MemoryEngineStore(client)


def _entries(client: MemoryEngineClient, store: MemoryEngineStore, namespace: tuple[str, ...]) -> list[Any]:
    memory_id = store._memory(namespace, create=False)
    assert memory_id
    return list(client.iter_entries(memory_id=memory_id))


def test_put_get_update_delete_and_what_the_engine_holds(store: MemoryEngineStore, client: MemoryEngineClient) -> None:
    store.put(U1, "tea", {"text": "Sam drinks green tea every morning.", "kind": "food"})
    first = store.get(U1, "tea")
    assert first is not None and first.value == {"text": "Sam drinks green tea every morning.", "kind": "food"}
    assert first.namespace == U1 and first.key == "tea"

    [entry] = _entries(client, store, U1)
    assert entry.content == "tea: Sam drinks green tea every morning. food"
    assert entry.metadata and entry.metadata["langgraph"]["value"] == first.value

    store.put(U1, "tea", {"text": "Sam switched to black tea.", "kind": "food"})
    updated = store.get(U1, "tea")
    assert updated is not None and updated.value["text"] == "Sam switched to black tea."
    assert updated.created_at == first.created_at and updated.updated_at > first.updated_at
    assert [e.content for e in _entries(client, store, U1)] == ["tea: Sam switched to black tea. food"]
    # a second store (another process) finds the same item
    assert MemoryEngineStore(client).get(U1, "tea") == updated

    store.delete(U1, "tea")
    assert store.get(U1, "tea") is None and _entries(client, store, U1) == []
    assert store.get(("nowhere",), "x") is None


def test_search_ranks_with_scores_scopes_by_prefix_and_filters(store: MemoryEngineStore) -> None:
    items = {
        "bike": {"text": "Sam rides a red bicycle to work.", "kind": "transport", "n": 1},
        "food": {"text": "Sam is allergic to peanuts.", "kind": "health", "n": 2},
        "job": {"text": "Sam works as a nurse at the city hospital.", "kind": "work", "n": 3},
    }
    for key, value in items.items():
        store.put(U1, key, value)
    store.put(U2, "bike", {"text": "Kim rides a blue bicycle.", "kind": "transport", "n": 4})
    store.put(U1, "secret", {"text": "Sam's bicycle lock code is 1234."}, index=False)

    found = store.search(("users", "u1"), query="what bicycle does Sam ride?", limit=3)
    assert found[0].key == "bike" and found[0].namespace == U1
    assert all(isinstance(i.score, float) for i in found)
    assert [i.score for i in found] == sorted((i.score for i in found), reverse=True)  # type: ignore[misc]
    assert {i.key for i in found} <= set(items)  # u2's item and the unindexed one are not returned

    both = store.search(("users",), query="bicycle", limit=10)
    assert {(i.namespace, i.key) for i in both} >= {(U1, "bike"), (U2, "bike")}

    listed = store.search(("users", "u1"), limit=10)
    assert {i.key for i in listed} == {*items, "secret"} and all(i.score is None for i in listed)
    assert [i.key for i in store.search(("users",), filter={"kind": "transport"})] == ["bike", "bike"]
    assert [i.key for i in store.search(U1, filter={"n": {"$gte": 2}}, limit=1, offset=1)] == ["food"]
    store.put(U2, "nested", {"text": "Kim's settings.", "prefs": {"theme": "dark", "size": 3}})
    assert [i.key for i in store.search(("users",), filter={"prefs.theme": "dark", "prefs.size": {"$lt": 4}})] == [
        "nested"]
    assert [i.key for i in store.search(U1, query="bicycle", filter={"kind": "work"})] in ([], ["job"])
    with pytest.raises(ValueError, match="not supported"):
        store.search(U1, filter={"n": {"$in": [1]}})
    secret = store.get(U1, "secret")
    assert secret is not None and secret.value["text"].startswith("Sam's bicycle")


def test_ttl_namespaces_and_async(store: MemoryEngineStore, client: MemoryEngineClient) -> None:
    store.put(("ttl", "a"), "k", {"text": "short-lived note"}, ttl=5)
    [entry] = _entries(client, store, ("ttl", "a"))
    assert entry.expires_at is not None and NOT_INDEXED not in entry.tags
    assert timedelta(minutes=4) < entry.expires_at - entry.updated_at <= timedelta(minutes=5)
    store.put(("ttl", "b", "c"), "k", {"text": "another"})
    store.put(("ttl", "gone"), "k", {"text": "deleted soon"})
    store.delete(("ttl", "gone"), "k")

    assert store.list_namespaces(prefix=("ttl",)) == [("ttl", "a"), ("ttl", "b", "c")]
    assert store.list_namespaces(prefix=("ttl",), max_depth=2) == [("ttl", "a"), ("ttl", "b")]
    assert store.list_namespaces(suffix=("c",)) == [("ttl", "b", "c")]
    assert store.list_namespaces(prefix=("ttl", "*", "c")) == [("ttl", "b", "c")]

    async def scenario() -> tuple[Any, Any]:
        await store.aput(("async",), "k", {"text": "written from a coroutine"})
        got = await store.aget(("async",), "k")
        found = await store.asearch(("async",), query="coroutine")
        await store.adelete(("async",), "k")
        return got, found

    got, found = asyncio.run(scenario())
    assert got.value == {"text": "written from a coroutine"} and [i.key for i in found] == ["k"]
    assert store.get(("async",), "k") is None


class State(TypedDict):
    user: str
    fact: str
    recalled: list[str]


def test_a_compiled_graph_reads_and_writes_through_the_store(store: MemoryEngineStore) -> None:
    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        store.put(("graph", state["user"]), "latest", {"text": state["fact"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        return {"recalled": [i.value["text"] for i in store.search(("graph", state["user"]), query="city")]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)

    out = graph.invoke({"user": "sam", "fact": "Sam moved to the city of Porto.", "recalled": []})

    assert out["recalled"] == ["Sam moved to the city of Porto."]
    assert MemoryEngineStore(store._client).get(("graph", "sam"), "latest") is not None
