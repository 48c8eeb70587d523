"""Batch writes and deletes of memory entries (issue 15) on the real database and the real local
model: per-item results, in-batch duplicates, one embedding call, retries, isolation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
import pytest

from memory_engine.bootstrap import Container
from memory_engine.ports.chat import NoChatModel
from memory_engine.ports.embedder import Embedder, EmbeddingKind, Vector
from memory_engine.services.write_batch import write_entries
from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient
from tests.support.memories import FailingEmbedder


class CountingEmbedder(Embedder):
    """The real model, counting calls to ``embed_documents`` (a port subclass, not a patch)."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__()
        self.dimensions, self.model_id, self._inner = inner.dimensions, inner.model_id, inner
        self.document_calls: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.document_calls.append(list(texts))
        return self._inner.embed_documents(texts)

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        raise NotImplementedError


@pytest.fixture(scope="module")
def memory_id(api: ApiClient) -> str:
    return str(api.post("/v1/memories", {"name": "batch"}).json["id"])


def _project_of(container: Container, memory_id: str) -> str:
    with psycopg.connect(container.settings.database_url) as conn:
        row = conn.execute("SELECT project_id FROM memories WHERE id = %s", (memory_id,)).fetchone()
    assert row is not None
    return str(row[0])


def _facts(memory_id: str, n: int, prefix: str) -> list[dict[str, Any]]:
    return [{"memory_id": memory_id, "content": f"{prefix} fact number {i} is about topic {i * 7}."} for i in range(n)]


def test_batch_answers_per_item_in_order_even_when_some_fail(api: ApiClient, memory_id: str, make_key: KeyFactory) -> None:
    # Given a batch with valid facts, an in-batch repeat, invalid items and another project's memory
    other = ApiClient(make_key("batch-other", "read,write"))
    foreign = other.post("/v1/memories", {"name": "theirs"}).json["id"]
    items = [
        {"memory_id": memory_id, "content": "Alice moved to Lisbon in 2021.", "entities": [{"name": "Alice"}]},
        {"memory_id": memory_id, "content": "   "},                                     # blank: 422
        {"memory_id": memory_id, "content": "Alice moved to Lisbon in 2021.", "entities": [{"name": "Alice"}]},
        {"memory_id": foreign, "content": "Bob likes tea."},                          # not in this project
        {"memory_id": memory_id, "content": "x", "confidence": 7},                    # pydantic: 422
        {"memory_id": memory_id, "content": "y" * 9000},                              # 413
        {"memory_id": memory_id, "content": "Bob likes tea.", "unknown": 1},          # extra field
        {"memory_id": memory_id, "content": "Carol plays the cello.", "tags": ["music"]},
    ]
    # When it is sent
    response = api.post("/v1/memory-entries/batch", {"entries": items})
    # Then 200, one result per item in order, each with the funnel's action or the error
    assert response.status == 200, response.json
    body = response.json
    actions = [r["action"] for r in body["results"]]
    assert [r["index"] for r in body["results"]] == list(range(len(items)))
    assert actions == ["created", "rejected", "skipped", "rejected", "rejected", "rejected", "rejected", "created"]
    assert body["results"][2]["entry"]["id"] == body["results"][0]["entry"]["id"]
    codes = [r["error"]["code"] for r in body["results"] if r["action"] == "rejected"]
    assert codes == ["validation_error", "not_found", "validation_error", "payload_too_large", "validation_error"]
    assert (body["created"], body["skipped"], body["rejected"]) == (2, 1, 5)
    assert body["results"][7]["entry"]["tags"] == ["music"]
    # and nothing reached the other project's memory
    assert other.get("/v1/memory-entries", params={"memory_id": foreign}).json["data"] == []


def test_retrying_a_batch_skips_every_item(api: ApiClient, memory_id: str) -> None:
    items = _facts(memory_id, 12, "Retry")
    first = api.post("/v1/memory-entries/batch", {"entries": items}).json
    assert first["created"] == 12
    second = api.post("/v1/memory-entries/batch", {"entries": items}).json
    assert second["skipped"] == 12 and second["created"] == 0
    assert [r["entry"]["id"] for r in second["results"]] == [r["entry"]["id"] for r in first["results"]]


def test_batch_embeds_ahead_in_a_few_calls(container: Container, memory_id: str) -> None:
    # Given a batch of 40 facts, some in one conversation (each embedded with the turn before it)
    counting = CountingEmbedder(container.embedder)
    project_id = _project_of(container, memory_id)
    turns = ["I planted tomatoes last spring. " + "They grew tall and green all summer long. " * 30,
             "The cat knocked over my coffee.", "We are flying to Oslo in May.",
             "My sister just started medical school.", "I finally fixed the leaking roof."]
    items = _facts(memory_id, 35, "Single-call") + [
        {"memory_id": memory_id, "content": turn, "subject": "Dana", "source_conversation_id": "conv-batch-1",
         "entities": [{"name": "Dana"}]} for turn in turns
    ]
    # When it is written
    results = write_entries(container.entries, counting, NoChatModel(), project_id=project_id, items=items)
    # Then every item was created with a vector embedded ahead, in a few calls (slices of items,
    # not one call per fact), each text once
    assert [r.action for r in results] == ["created"] * 40
    assert 1 < len(counting.document_calls) <= 3, [len(c) for c in counting.document_calls]
    embedded = [text for call in counting.document_calls for text in call]
    # the facts, the entity "Dana", and the own text of each turn with a turn before it (the funnel
    # decides on it; only the turn after the long one, its context cut to fit, stores it)
    assert len(embedded) == len(set(embedded)) == 40 + 1 + 4
    with psycopg.connect(container.settings.database_url) as conn:
        missing = conn.execute("SELECT count(*) FROM memory_entries WHERE memory_id = %s AND embedding IS NULL",
                               (memory_id,)).fetchone()
        owns = conn.execute("SELECT count(*) FROM memory_entries WHERE memory_id = %s AND own_embedding IS NOT NULL",
                            (memory_id,)).fetchone()
    assert missing is not None and missing[0] == 0
    assert owns is not None and owns[0] == 1
    # and the conversation's turns carry the turn before them as context, as single writes do
    second = container.entries.get(project_id, results[36].entry.id)  # type: ignore[union-attr]
    assert second.context is not None and "I planted tomatoes" in second.context


def test_batch_with_the_model_down_still_stores_every_fact(container: Container, memory_id: str) -> None:
    results = write_entries(container.entries, FailingEmbedder(), NoChatModel(), project_id=_project_of(container, memory_id),
                            items=_facts(memory_id, 3, "Offline"))
    assert [r.action for r in results] == ["created"] * 3


def test_batch_limits(api: ApiClient, memory_id: str) -> None:
    assert api.post("/v1/memory-entries/batch", {"entries": _facts(memory_id, 101, "Over")}).status == 422
    assert api.post("/v1/memory-entries/batch", {"entries": []}).status == 422


def test_batch_delete_by_ids(api: ApiClient, memory_id: str, make_key: KeyFactory) -> None:
    # Given two entries here and one in another project
    mine = api.post("/v1/memory-entries/batch", {"entries": _facts(memory_id, 2, "Delete-me")}).json["results"]
    ids = [r["entry"]["id"] for r in mine]
    other = ApiClient(make_key("batch-other", "read,write"))
    theirs_memory = other.post("/v1/memories", {"name": "theirs-2"}).json["id"]
    theirs = other.post("/v1/memory-entries", {"memory_id": theirs_memory, "content": "Keep me."}).json["id"]
    # When a batch delete names all three, an unknown id and a repeat
    response = api.request("DELETE", "/v1/memory-entries/batch", json_body={"ids": [*ids, theirs, "ment_nope", ids[0]]})
    # Then only this project's entries are deleted; the rest are not_found
    assert response.status == 200, response.json
    assert [r["action"] for r in response.json["results"]] == ["deleted", "deleted", "not_found", "not_found", "not_found"]
    assert (response.json["deleted"], response.json["not_found"]) == (2, 3)
    assert other.get(f"/v1/memory-entries/{theirs}").status == 200
    assert api.get(f"/v1/memory-entries/{ids[0]}").status == 404
    # and a retry deletes nothing more
    again = api.request("DELETE", "/v1/memory-entries/batch", json_body={"ids": ids})
    assert again.json["deleted"] == 0


def _tricky_items(m1: str, m2: str) -> list[dict[str, Any]]:
    """Items whose outcome depends on the ones before them, across the batch's slices (8, then 16)."""
    return [
        {"memory_id": m1, "content": "Alice moved to Lisbon in 2021.", "entities": [{"name": "Alice"}]},
        {"memory_id": m1, "content": "Alice moved to Lisbon in 2021."},                      # in-batch repeat
        {"memory_id": m1, "content": "Alice relocated to Lisbon in 2021.", "duplicate_threshold": 0.8},
        {"memory_id": m1, "content": "Alice relocated to Lisbon in 2021."},
        {"memory_id": m2, "content": "Alice moved to Lisbon in 2021."},                      # another memory
        {"memory_id": m1, "content": "Bob plays chess on Sundays.", "subject": "Bob", "entities": [{"name": "Chess"}]},
        {"memory_id": m1, "content": "Bob plays chess every Sunday.", "entities": [{"name": "chess", "type": "game"}]},
        {"memory_id": m1, "content": "Bob plays chess on Sundays.", "duplicate_threshold": 1.0},
        {"memory_id": m1, "content": "I planted tomatoes last spring.", "subject": "Dana", "source_conversation_id": "c1"},
        {"memory_id": m1, "content": "The cat knocked over my coffee.", "subject": "Dana", "source_conversation_id": "c1"},
        {"memory_id": m1, "content": "A fact stored before the batch."},                     # repeat of a stored one
        {"memory_id": m1, "content": "A fact that expires one day.", "expires_at": "2999-01-01T00:00:00Z"},
        {"memory_id": m1, "content": "   "},
        {"memory_id": m1, "content": "A fact that expires one day."},
        {"memory_id": m1, "content": "Carol plays the cello.", "tags": ["music"], "metadata": {"k": 1},
         "context": "Said at lunch."},
        {"memory_id": m1, "content": "Carol plays the cello."},
        {"memory_id": m1, "content": "Carol plays cello in an orchestra.", "duplicate_threshold": 0.0},
        {"memory_id": m2, "content": "Carol plays the cello.", "duplicate_threshold": 0.6},
        {"memory_id": m1, "content": "A fact stored before the batch, nearly.", "duplicate_threshold": 0.9},
        {"memory_id": "mem_unknown", "content": "Nowhere to go."},
        {"memory_id": m1, "content": "The user is allergic to peanuts.", "entities": [{"name": "Alice"}, {"name": "Peanuts"}]},
        {"memory_id": m1, "content": "The user is allergic to peanuts and shellfish.", "duplicate_threshold": 0.8},
        {"memory_id": m1, "content": "Bob's favourite colour is blue.", "subject": "Bob"},
        {"memory_id": m1, "content": "Bob's favourite colour is green.", "subject": "Bob", "duplicate_threshold": 0.85},
        {"memory_id": m1, "content": "Alice moved to Lisbon in 2021.", "duplicate_threshold": 1.0},
        {"memory_id": m2, "content": "Alice moved to Lisbon in 2021!", "duplicate_threshold": 0.9},  # item 4, 2 slices on
        {"memory_id": m2, "content": "Alice moved to Lisbon in 2021."},
        {"memory_id": m2, "content": "Carol plays the cello in an orchestra.", "duplicate_threshold": 0.7},
        {"memory_id": m2, "content": "We are flying to Oslo in May.", "subject": "Eve", "source_conversation_id": "c2"},
        {"memory_id": m2, "content": "We are flying to Oslo in May."},                      # a turn's repeat
        {"memory_id": m2, "content": "Eve and I fly to Oslo in May.", "duplicate_threshold": 0.7},
    ]


def _labelled(container: Container, project_id: str, memory_ids: list[str], outcomes: list[tuple[str, str | None]],
              seeded: list[str]) -> tuple[list[tuple[str, Any]], list[tuple[Any, ...]]]:
    """Each item's (action, which item or seeded fact its entry is), and the stored rows in order."""
    created_by = {entry_id: ("item", i) for i, (action, entry_id) in enumerate(outcomes) if action == "created"}
    created_by.update({entry_id: ("seed", i) for i, entry_id in enumerate(seeded)})
    labels = [(action, created_by.get(entry_id) if entry_id else None) for action, entry_id in outcomes]
    rows = []
    for memory_id in memory_ids:
        entries, _ = container.entries.list(project_id, memory_id=memory_id, limit=100)
        for entry in reversed(entries):  # oldest first
            rows.append((memory_ids.index(memory_id), entry.content, entry.context, entry.subject, entry.tags,
                         entry.metadata, [(e.name, e.type, e.role) for e in entry.entities], entry.expires_at is not None))
    return labels, rows


def test_batch_decides_each_item_as_single_writes_would(api: ApiClient, container: Container) -> None:
    # Given two pairs of memories holding the same stored facts
    project_id = _project_of(container, str(api.post("/v1/memories", {"name": "probe"}).json["id"]))
    pairs = [[str(api.post("/v1/memories", {"name": f"{side}-{n}"}).json["id"]) for n in (1, 2)] for side in ("batch", "single")]
    seeded: dict[int, list[str]] = {}
    for side, (m1, _) in enumerate(pairs):
        seeded[side] = [api.post("/v1/memory-entries", {"memory_id": m1, "content": text}).json["id"]
                        for text in ("A fact stored before the batch.", "Carol plays the piano.")]
    # When the same items are written as one batch into one pair and one request at a time into the other
    batch = write_entries(container.entries, container.embedder, NoChatModel(), project_id=project_id,
                          items=_tricky_items(*pairs[0]))
    single: list[tuple[str, str | None]] = []
    for item in _tricky_items(*pairs[1]):
        response = api.post("/v1/memory-entries", item)
        if response.status in (200, 201):
            single.append((response.json["action"], response.json["id"]))
        else:
            single.append(("rejected", None))
    # Then every item has the same outcome (the same action, onto the same earlier fact), and the
    # memories hold the same rows in the same order
    batch_outcomes = [(r.action, r.entry.id if r.entry else None) for r in batch]
    batch_labels, batch_rows = _labelled(container, project_id, pairs[0], batch_outcomes, seeded[0])
    single_labels, single_rows = _labelled(container, project_id, pairs[1], single, seeded[1])
    assert batch_labels == single_labels
    assert batch_rows == single_rows
    assert {"created", "skipped", "rejected"} <= {action for action, _ in batch_labels}
