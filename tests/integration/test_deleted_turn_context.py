"""A deleted conversation turn leaves no words behind: the turns around it kept it in their
``context`` (searched by keyword, returned by ``GET``, exported) and the turn after it in its
vector. Whichever way it is deleted (one entry, a batch, forgetting an entity) or rewritten
(``PUT``), the turns left get their context as a write would give it now and the vector that read
it is embedded again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from memory_engine.bootstrap import Container
from memory_engine.errors import EmbeddingError
from memory_engine.services.memories import embed_cleared
from tests.support.api_client import ApiClient

SECRET = "zorblatt"
TURNS = (
    "We talked about the garden today.",
    f"My bank PIN is {SECRET} 4417, keep it secret.",
    "Okay, I will not tell anyone.",
    "Shall we plant tomatoes next?",
)


def _write(api: ApiClient, memory_id: str, *, entities: bool = False) -> list[str]:
    ids = []
    for i, text in enumerate(TURNS):
        body: dict[str, Any] = {"memory_id": memory_id, "content": text, "source_conversation_id": "c1",
                                "subject": "Ann" if i % 2 == 0 else "Ben"}
        if entities and SECRET in text:
            body["entities"] = [{"name": "Zorblatt", "type": "thing"}]
        response = api.post("/v1/memory-entries", body)
        assert response.status == 201, response.json
        ids.append(str(response.json["id"]))
    return ids


def _vector(container: Container, entry_id: str) -> str | None:
    with psycopg.connect(container.settings.database_url or "") as conn:
        row = conn.execute("SELECT embedding::text FROM memory_entries WHERE id = %s", (entry_id,)).fetchone()
    assert row is not None
    return row[0]


def _assert_gone(api: ApiClient, container: Container, memory_id: str, ids: list[str], before: dict[str, str | None]) -> None:
    first, _, after, last = ids
    contexts = {i: api.get(f"/v1/memory-entries/{i}").json["context"] for i in (first, after, last)}
    # the turns around it read as if it had never been said: the turn before and after each
    assert contexts == {
        first: "Ann: Okay, I will not tell anyone.",
        after: "Ann: We talked about the garden today.\nBen: Shall we plant tomatoes next?",
        last: "Ann: Okay, I will not tell anyone.",
    }, contexts
    # no row is found by its words any more (the keyword signal alone, the whole ranking)
    body = api.post("/v1/knowledge/search", {"query": SECRET, "memory_ids": [memory_id], "min_score": 0,
                                             "signals": ["keyword"]}).json
    assert body["results"] == [], body
    # the turn right after it read it in its vector: embedded again, from its own line
    assert _vector(container, after) not in (None, before[after])
    assert _vector(container, last) == before[last]  # its vector never read it


@pytest.fixture
def conversation(api: ApiClient, container: Container) -> tuple[str, list[str], dict[str, str | None]]:
    memory_id = str(api.post("/v1/memories", {"name": "chat"}).json["id"])
    ids = _write(api, memory_id, entities=True)
    # before: the secret is in the turns around it
    assert SECRET in api.get(f"/v1/memory-entries/{ids[0]}").json["context"]
    assert SECRET in api.get(f"/v1/memory-entries/{ids[2]}").json["context"]
    return memory_id, ids, {i: _vector(container, i) for i in ids}


def test_deleting_a_turn_takes_its_words_out_of_the_turns_around_it(
    api: ApiClient, container: Container, conversation: tuple[str, list[str], dict[str, str | None]],
) -> None:
    memory_id, ids, before = conversation
    assert api.delete(f"/v1/memory-entries/{ids[1]}").status == 204
    _assert_gone(api, container, memory_id, ids, before)


def test_a_batch_delete_does_the_same(
    api: ApiClient, container: Container, conversation: tuple[str, list[str], dict[str, str | None]],
) -> None:
    memory_id, ids, before = conversation
    response = api.delete("/v1/memory-entries/batch", json_body={"ids": [ids[1]]})
    assert response.status == 200 and response.json["results"][0]["action"] == "deleted", response.json
    _assert_gone(api, container, memory_id, ids, before)


def test_forgetting_an_entity_does_the_same(
    api: ApiClient, container: Container, conversation: tuple[str, list[str], dict[str, str | None]],
) -> None:
    memory_id, ids, before = conversation
    response = api.post("/v1/forget", {"memory_id": memory_id, "entity": "Zorblatt"})
    assert response.status == 200 and response.json["deleted"]["entries"] == 1, response.json
    _assert_gone(api, container, memory_id, ids, before)


def test_rewriting_a_turn_replaces_its_words_in_the_turns_around_it(
    api: ApiClient, container: Container, conversation: tuple[str, list[str], dict[str, str | None]],
) -> None:
    memory_id, ids, before = conversation
    response = api.put(f"/v1/memory-entries/{ids[1]}", {"content": "[redacted]"})
    assert response.status == 200, response.json
    contexts = [api.get(f"/v1/memory-entries/{i}").json["context"] for i in (ids[0], ids[2])]
    assert contexts == ["Ben: [redacted]", "Ben: [redacted]\nBen: Shall we plant tomatoes next?"], contexts
    body = api.post("/v1/knowledge/search", {"query": SECRET, "memory_ids": [memory_id], "min_score": 0,
                                             "signals": ["keyword"]}).json
    assert body["results"] == [], body
    assert _vector(container, ids[2]) not in (None, before[ids[2]])


class _Entries:
    """An entry repository's two calls the re-embedding makes, recorded."""

    def __init__(self) -> None:
        self.stored: list[tuple[str, Any]] = []

    def uncovered(self, project_id: str, entry_ids: list[str]) -> list[tuple[str, str]]:
        return [(i, f"text of {i}") for i in entry_ids]

    def store_vectors(self, project_id: str, vectors: list[tuple[str, Any]]) -> int:
        self.stored += vectors
        return len(vectors)


class _Embedder:
    def __init__(self, embed: Callable[[list[str]], list[list[float]]]) -> None:
        self.embed_documents = embed


def test_a_failed_model_leaves_the_vector_cleared_and_the_deletion_done() -> None:
    def down(texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("model down")

    entries = _Entries()
    assert embed_cleared(entries, _Embedder(down), "p", ["e1"]) == 0  # type: ignore[arg-type]
    assert entries.stored == []  # nothing stored: the row waits for memory-engine reembed, without the old vector
    assert embed_cleared(entries, _Embedder(lambda texts: [[0.5] for _ in texts]), "p", ["e1"]) == 1  # type: ignore[arg-type]
    assert entries.stored == [("e1", [0.5])]
