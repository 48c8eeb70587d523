"""Every way an episode is stored ends with vector windows over its whole transcript, as a turn
recorded through ``POST /v1/memories/{id}/turns`` gets them: an import (an export holds one vector per
episode) embeds the windows a long turn needs, and ``memory-engine reembed`` completes the episodes
whose windows stop short (stored while the model was down, imported or windowed by migration 0009
from their one vector before)."""

from __future__ import annotations

from typing import Any

import psycopg

from memory_engine.adapters.postgres.embedding_repair import PostgresEmbeddingRepair
from memory_engine.bootstrap import Container
from memory_engine.domain.turns import window_spans
from memory_engine.services.reembed import reembed_missing
from tests.conftest import KeyFactory
from tests.integration.test_search_episodes import CLUSTER, VECTOR_TURN
from tests.support.api_client import ApiClient

QUERY = "pods evicted when the kubernetes cluster ran out of memory"


def _windows(container: Container, memory_id: str) -> dict[str, list[tuple[int, int]]]:
    with psycopg.connect(container.settings.database_url or "") as conn:
        rows = conn.execute("SELECT e.transcript, w.start_char, w.end_char FROM episodes e"
                            " LEFT JOIN episode_windows w ON w.episode_id = e.id WHERE e.memory_id = %s"
                            " ORDER BY e.id, w.window_index", (memory_id,)).fetchall()
    out: dict[str, list[tuple[int, int]]] = {}
    for transcript, start, end in rows:
        out.setdefault(transcript, [])
        if start is not None:
            out[transcript].append((start, end))
    return out


def _found_by_meaning(api: ApiClient, memory_id: str) -> dict[str, Any]:
    body = api.post("/v1/knowledge/search", {"query": QUERY, "memory_ids": [memory_id], "include": ["episodes"],
                                             "signals": ["vector"], "min_score": 0}).json
    return dict(body["results"][0])


def _memory_with_a_long_turn(api: ApiClient) -> tuple[str, str]:
    memory = api.post("/v1/memories", {"name": "long turns"}).json["id"]
    recorded = api.post(f"/v1/memories/{memory}/turns", {"conversation_id": "c", "turns": [
        {"turn_id": "t-1", "role": "user", "content": VECTOR_TURN},
        {"turn_id": "t-2", "role": "assistant", "content": "Noted."}]})
    assert recorded.status == 201, recorded.json
    return str(memory), f"user: {VECTOR_TURN}"


def test_an_imported_long_turn_is_found_by_meaning_in_a_later_window(
        api: ApiClient, container: Container, make_key: KeyFactory) -> None:
    # Given a memory holding a long turn whose third window is about a kubernetes outage, exported
    memory, transcript = _memory_with_a_long_turn(api)
    assert len(window_spans(transcript)) >= 4 and transcript.index(CLUSTER) > 2_000
    exported = api.get(f"/v1/memories/{memory}/export")
    assert exported.status == 200
    # When another project imports it with the file's vectors
    other = ApiClient(make_key("import-windows", "read,write"))
    imported = other.request("POST", "/v1/memories/import", body=exported.body,
                             headers={"content-type": "application/x-ndjson"})
    assert imported.status == 201, imported.json
    summary = imported.json
    # Then the long turn was embedded over its whole transcript (the short one kept the file's vector)
    assert (summary["episodes"], summary["vectors_reused"], summary["embedded"]) == (2, True, 1), summary
    new_memory = summary["memory"]["id"]
    assert _windows(container, new_memory) == {transcript: window_spans(transcript), "assistant: Noted.": [(0, 17)]}
    # and it is found by the window that says it, as in the memory it came from
    found, original = _found_by_meaning(other, new_memory), _found_by_meaning(api, memory)
    assert found["source_type"] == "episode" and "evicted" in found["content"], found
    assert abs(found["similarity_score"] - original["similarity_score"]) < 1e-4


def test_reembed_completes_the_windows_of_episodes_that_stop_short(api: ApiClient, container: Container) -> None:
    # Given a long turn left with its first window only (as imports and migration 0009 left them), and one
    # stored while the model was down (no vector, no window)
    memory, transcript = _memory_with_a_long_turn(api)
    with psycopg.connect(container.settings.database_url or "") as conn:
        conn.execute("DELETE FROM episode_windows w USING episodes e WHERE w.episode_id = e.id AND e.memory_id = %s"
                     " AND w.window_index > 0", (memory,))
        conn.execute("UPDATE episodes SET embedding = NULL WHERE memory_id = %s AND turn_id = 't-2'", (memory,))
        conn.execute("DELETE FROM episode_windows w USING episodes e WHERE w.episode_id = e.id AND e.turn_id = 't-2'"
                     " AND e.memory_id = %s", (memory,))
    assert _windows(container, memory) == {transcript: [window_spans(transcript)[0]], "assistant: Noted.": []}
    assert "evicted" not in _found_by_meaning(api, memory)["content"]
    repair = PostgresEmbeddingRepair(container.database)
    assert repair.count_missing("episodes") >= 2
    # When reembed runs
    repaired = reembed_missing(repair, container.embedder, tables=["episodes"], batch_size=1)
    # Then both have windows over their whole transcript, the short one its vector too, and the long
    # turn is found by its third window again
    assert repaired["episodes"] >= 2
    assert _windows(container, memory) == {transcript: window_spans(transcript), "assistant: Noted.": [(0, 17)]}
    with psycopg.connect(container.settings.database_url or "") as conn:
        assert conn.execute("SELECT embedding IS NOT NULL FROM episodes WHERE memory_id = %s AND turn_id = 't-2'",
                            (memory,)).fetchone() == (True,)
    assert "evicted" in _found_by_meaning(api, memory)["content"]
    # and a second run has nothing to do
    assert repair.count_missing("episodes") == 0
    assert reembed_missing(repair, container.embedder, tables=["episodes"]) == {"episodes": 0}
