"""Export and import of a memory (issue 15) on the real database and the real local model: the
JSONL shape, new ids with the old ones kept, history and provenance, vectors reused only from the
same model, isolation, the CLI, and a LoCoMo round trip that keeps the top-10 of 20 questions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memory_engine.adapters.postgres.imports import PostgresImporter
from memory_engine.bootstrap import Container
from memory_engine.cli import main as cli_main
from memory_engine.domain.search_models import SearchRequest
from memory_engine.errors import DatabaseError, InvalidInput
from memory_engine.evaluation import locomo
from memory_engine.ports.embedder import Embedder, EmbeddingKind
from memory_engine.services import memory_import
from memory_engine.services.export_import import export_memory
from memory_engine.services.memory_import import import_memory
from memory_engine.services.search_knowledge import search_knowledge
from tests.conftest import KeyFactory, shared_data
from tests.support.api_client import ApiClient


class OtherModel(Embedder):
    """The same vectors under another model id: an import must not keep the file's vectors."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__()
        self.dimensions, self.model_id, self._inner = inner.dimensions, "another-model", inner
        self.embedded: list[str] = []

    def _embed_batch(self, texts: Sequence[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        self.embedded.extend(texts)
        return self._inner._embed_batch(texts, kind)


def _lines(response_body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response_body.decode().splitlines() if line.strip()]


def _memory_with_history(api: ApiClient, container: Container) -> str:
    memory = api.post("/v1/memories", {"name": "portable", "tags": ["t"], "metadata": {"owner": "me"},
                                       "default_ttl": 86400}).json["id"]
    api.post("/v1/memory-entries", {"memory_id": memory, "content": "Ola lives in Bergen.", "subject": "Ola",
                                    "entities": [{"name": "Ola", "type": "person"}, {"name": "Bergen"}],
                                    "source_conversation_id": "conv-x", "metadata": {"k": 1}})
    newer = api.post("/v1/memory-entries", {"memory_id": memory, "content": "Ola moved to Oslo.", "subject": "Ola",
                                            "entities": [{"name": "Ola"}, {"name": "Oslo"}]}).json
    old = api.get("/v1/memory-entries", params={"memory_id": memory}).json["data"][-1]
    with psycopg.connect(container.settings.database_url or "") as conn:  # history: the old fact superseded
        conn.execute("UPDATE memory_entries SET invalidated_at = now(), superseded_by_entry_id = %s,"
                     " invalidation_reason = 'moved' WHERE id = %s", (newer["id"], old["id"]))
    acme = container.projects.get_or_create_project("acme").id
    from tests.support.extraction import turn_event
    event = turn_event(project_id=acme, memory_id=memory, conversation_id="conv-x",
                       messages=[{"role": "user", "content": "Ola says hi from Bergen."}])
    assert api.post("/v1/events", event, params={"wait": "true"}).status == 200
    return str(memory)


def test_export_then_import_into_another_project(api: ApiClient, container: Container, make_key: KeyFactory) -> None:
    # Given a memory with a superseded fact, entities and an episode
    memory = _memory_with_history(api, container)
    # When it is exported
    exported = api.get(f"/v1/memories/{memory}/export")
    assert exported.status == 200 and exported.headers["Content-Type"].startswith("application/x-ndjson")
    lines = _lines(exported.body)
    # Then the lines are header, memory, entities, entries (with history), episodes
    assert [line["type"] for line in lines[:2]] == ["header", "memory"]
    assert lines[0]["embedding_model"] == container.embedder.model_id and lines[0]["vectors"] is True
    kinds = [line["type"] for line in lines]
    assert kinds.count("entry") == 2 and kinds.count("episode") == 1 and kinds.count("entity") == 3
    entries = [line for line in lines if line["type"] == "entry"]
    assert entries[0]["superseded_by_entry_id"] == entries[1]["id"] and len(entries[0]["embedding"]) == 384

    # When another project imports it
    other = ApiClient(make_key("import-other", "read,write"))
    acme = container.projects.get_or_create_project("acme").id
    before = {t: _rows(container, t, acme) for t in ("memories", "memory_entries", "entities", "episodes")}
    imported = other.request("POST", "/v1/memories/import", body=exported.body,
                             headers={"content-type": "application/x-ndjson"})
    # Then a new memory with new ids, the old ones in metadata, history and provenance as they were
    assert imported.status == 201, imported.json
    summary = imported.json
    assert (summary["entries"], summary["episodes"], summary["embedded"], summary["vectors_reused"]) == (2, 1, 0, True)
    new_memory = summary["memory"]
    assert new_memory["id"] != memory and new_memory["metadata"] == {"owner": "me", "imported_from": {"id": memory}}
    assert new_memory["default_ttl"] == 86400 and new_memory["tags"] == ["t"]
    listed = other.get("/v1/memory-entries", params={"memory_id": new_memory["id"], "include_invalidated": "true"}).json
    by_old = {e["metadata"]["imported_from"]["id"]: e for e in listed["data"]}
    assert set(by_old) == {e["id"] for e in entries}
    old_fact, new_fact = by_old[entries[0]["id"]], by_old[entries[1]["id"]]
    assert old_fact["superseded_by_entry_id"] == new_fact["id"] and old_fact["invalidation_reason"] == "moved"
    assert old_fact["source_conversation_id"] == "conv-x" and old_fact["metadata"]["k"] == 1
    assert datetime.fromisoformat(old_fact["created_at"]) == datetime.fromisoformat(entries[0]["created_at"])
    assert {e["name"] for e in new_fact["entities"]} == {"Ola", "Oslo"}
    # and the imported episode is searchable by vector: one window from its vector (windows are not exported)
    with psycopg.connect(container.settings.database_url or "") as conn:
        windows = conn.execute("SELECT w.start_char, w.end_char, length(e.transcript) FROM episode_windows w"
                               " JOIN episodes e ON e.id = w.episode_id WHERE e.memory_id = %s",
                               (new_memory["id"],)).fetchall()
    assert len(windows) == 1 and windows[0][:2] == (0, windows[0][2]), windows
    # and the caller's own project was not touched
    assert {t: _rows(container, t, acme) for t in before} == before
    # and a foreign memory cannot be exported
    assert other.get(f"/v1/memories/{memory}/export").status == 404


def _rows(container: Container, table: str, project_id: str) -> Any:
    with psycopg.connect(container.settings.database_url or "") as conn:
        return conn.execute(f"SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), ''))"
                            f" FROM {table} x WHERE project_id = %s", (project_id,)).fetchone()


def test_vectors_of_another_model_are_never_kept(api: ApiClient, container: Container) -> None:
    memory = _memory_with_history(api, container)
    acme = container.projects.get_or_create_project("acme").id
    lines = list(export_memory(container.lifecycle, container.embedder, acme, memory))
    other_model = OtherModel(container.embedder)
    summary = import_memory(lines, project_id=acme, episodes=container.episodes, importer=container.importer,
                            embedder=other_model)
    # every entry, entity and episode was embedded with the importing deployment's model
    assert summary.vectors_reused is False and summary.embedded == 2 + 3 + 1
    assert len(other_model.embedded) == 6
    # and an export without vectors is re-embedded even by the same model
    bare = list(export_memory(container.lifecycle, container.embedder, acme, memory, vectors=False))
    assert all('"embedding"' not in line for line in bare)
    again = import_memory(bare, project_id=acme, episodes=container.episodes, importer=container.importer,
                          embedder=container.embedder)
    assert again.vectors_reused is False and again.embedded == 6


def test_bad_imports_are_422_naming_the_line(api: ApiClient) -> None:
    headers = {"content-type": "application/x-ndjson"}
    assert api.request("POST", "/v1/memories/import", body=b"", headers=headers).status == 422
    assert api.request("POST", "/v1/memories/import", body=b"not json\n", headers=headers).status == 422
    bad = (b'{"type":"header","format":"memory-engine.memory","version":1}\n'
           b'{"type":"memory","id":"m","name":"x"}\n{"type":"nope"}\n')
    response = api.request("POST", "/v1/memories/import", body=bad, headers=headers)
    assert response.status == 422 and "line 3" in response.json["error"]["message"]


def test_cli_export_and_import(api: ApiClient, container: Container, tmp_path: Path, monkeypatch: Any) -> None:
    memory = _memory_with_history(api, container)
    monkeypatch.setenv("DATABASE_URL", container.settings.database_url or "")
    monkeypatch.setenv("MEMORY_ENGINE_HOME", str(tmp_path / "home"))
    out = tmp_path / "memory.jsonl"
    assert cli_main(["export", memory, "--project", "acme", "--output", str(out)]) == 0
    assert out.read_text().count('"type":"entry"') == 2
    assert cli_main(["import", str(out), "--project", "cli-imported"]) == 0
    project = container.projects.get_project("cli-imported")
    assert project is not None and _rows(container, "memory_entries", project.id)[0] == 2


def test_locomo_round_trip_keeps_every_top_10(container: Container) -> None:
    # Given one LoCoMo conversation (first 3 sessions, 20 questions) seeded as the eval harness does
    path = shared_data("locomo", "locomo_dev5.json")
    conversation = locomo.load(path, max_conversations=1, max_sessions=3)[0]
    questions = [q.text for q in conversation.questions][:20]
    assert len(questions) == 20
    source = container.projects.get_or_create_project("locomo-source").id
    memory_id, _ = locomo.seed(container, source, conversation)
    before = _top10(container, source, memory_id, questions)
    # When it is exported and imported into a fresh project
    target = container.projects.get_or_create_project("locomo-target").id
    summary = import_memory(export_memory(container.lifecycle, container.embedder, source, memory_id),
                            project_id=target, episodes=container.episodes, importer=container.importer,
                            embedder=container.embedder)
    # Then every question's top-10 is the same facts in the same order
    after = _top10(container, target, summary.memory.id, questions)
    old_of = {new: old for old, new in summary.entry_ids.items()}
    assert [[old_of[i] for i in ids] for ids in after] == before


def _top10(container: Container, project_id: str, memory_id: str, questions: list[str]) -> list[list[str]]:
    out = []
    for question in questions:
        response = search_knowledge(container.knowledge_index, container.embedder, project_id=project_id,
                                    request=SearchRequest(query=question, memory_ids=[memory_id], limit=10))
        out.append([r.id for r in response.results])
    return out


# --- issue 34 defect 5: an import is all or nothing, or marked partial and replaced on retry ---------
def _export_lines(entries: int, *, exported_id: str = "mem_src") -> list[str]:
    lines = [json.dumps({"type": "header", "format": "memory-engine.memory", "version": 1, "vectors": False}),
             json.dumps({"type": "memory", "id": exported_id, "name": "bulk"})]
    lines += [json.dumps({"type": "entry", "id": f"ent_{i}", "content": f"Bulk fact number {i} about fjords.",
                          "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"})
              for i in range(entries)]
    return lines


def _imported(container: Container, project_id: str, exported_id: str) -> list[tuple[str, Any, int]]:
    """(memory id, import_status, entries) of every memory imported from ``exported_id``."""
    with psycopg.connect(container.settings.database_url or "") as conn:
        return [tuple(r) for r in conn.execute(  # type: ignore[misc]
            "SELECT m.id, m.metadata->>'import_status', (SELECT count(*) FROM memory_entries e WHERE e.memory_id = m.id)"
            " FROM memories m WHERE m.project_id = %s AND m.metadata->'imported_from'->>'id' = %s ORDER BY m.created_at",
            (project_id, exported_id)).fetchall()]


class CrashingImporter(PostgresImporter):
    """The real importer that fails on its ``crash_at``-th chunk of entries (a process dying mid-import)."""

    def __init__(self, database: Any, crash_at: int) -> None:
        super().__init__(database)
        self.calls, self.crash_at = 0, crash_at

    def insert_entries(self, project_id: str, memory_id: str, entries: Any) -> None:
        self.calls += 1
        if self.calls == self.crash_at:
            raise DatabaseError("the database went away")
        super().insert_entries(project_id, memory_id, entries)


@pytest.mark.parametrize("bad", [
    '{"type":"entry","id":"x","content":"c","created_at":"2024-01-01T00:00:00Z","updated_at":"2024-01-01T00:00:00Z",'
    '"embedding":[NaN]}',
    '{"type":"entry","id":"x","content":"c","created_at":"2024-01-01T00:00:00Z","updated_at":"2024-01-01T00:00:00Z",'
    '"embedding":[Infinity, 1]}',
    "[" * 100_000,
    '{"type":"entry"}',
], ids=["nan-vector", "inf-vector", "too-deep", "invalid-record"])
def test_a_bad_line_leaves_nothing_behind(container: Container, bad: str) -> None:
    # Given an import whose line 7 is bad, after five good ones
    project = container.projects.get_or_create_project("import-atomic").id
    lines = [*_export_lines(5, exported_id="mem_bad"), bad]
    # When it is imported, Then it is 422 naming the line, and no memory (empty or not) is left
    with pytest.raises(InvalidInput, match="line 8"):
        import_memory(lines, project_id=project, episodes=container.episodes, importer=container.importer,
                      embedder=container.embedder)
    assert _imported(container, project, "mem_bad") == []


def test_an_import_failing_midway_leaves_nothing_and_a_retry_makes_one_copy(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an import of 12 entries written 5 per chunk, whose writer dies on the second chunk
    monkeypatch.setattr(memory_import, "IMPORT_CHUNK", 5)
    project = container.projects.get_or_create_project("import-atomic").id
    lines = _export_lines(12, exported_id="mem_once")
    with pytest.raises(DatabaseError):
        import_memory(lines, project_id=project, episodes=container.episodes,
                      importer=CrashingImporter(container.database, crash_at=2), embedder=container.embedder)
    # Then nothing of it is stored (one transaction)
    assert _imported(container, project, "mem_once") == []
    # And a retry stores it once, complete
    summary = import_memory(lines, project_id=project, episodes=container.episodes, importer=container.importer,
                            embedder=container.embedder)
    assert _imported(container, project, "mem_once") == [(summary.memory.id, None, 12)]


def test_a_large_import_is_marked_partial_until_done_and_a_retry_replaces_it(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an import larger than one transaction (12 rows over a limit of 10), written 5 per chunk
    monkeypatch.setattr(memory_import, "IMPORT_CHUNK", 5)
    project = container.projects.get_or_create_project("import-atomic").id
    lines = _export_lines(12, exported_id="mem_big")
    # When the process dies on the third chunk (after 10 entries are stored)
    with pytest.raises(DatabaseError) as crashed:
        import_memory(lines, project_id=project, episodes=container.episodes,
                      importer=CrashingImporter(container.database, crash_at=3), embedder=container.embedder,
                      transaction_rows=10)
    # Then the memory it left says it is partial, and the error names it
    [(partial_id, status, stored)] = _imported(container, project, "mem_big")
    assert (status, stored) == ("partial", 10)
    assert partial_id in crashed.value.message and crashed.value.details["memory_id"] == partial_id
    # And a bad line later in the file names the partial memory too
    with pytest.raises(InvalidInput) as bad:
        import_memory([*lines, '{"type":"entry"}'], project_id=project, episodes=container.episodes, importer=container.importer,
                      embedder=container.embedder, transaction_rows=10)
    [(second_id, status, _)] = _imported(container, project, "mem_big")  # the first partial copy was replaced
    assert status == "partial" and second_id != partial_id and second_id in bad.value.message
    # When the same import runs again to the end
    summary = import_memory(lines, project_id=project, episodes=container.episodes, importer=container.importer,
                            embedder=container.embedder, transaction_rows=10)
    # Then it replaced the partial copy: one memory, complete, every entry once
    assert _imported(container, project, "mem_big") == [(summary.memory.id, None, 12)]
    assert summary.entries == 12 and "import_status" not in (summary.memory.metadata or {})


def test_a_rejected_http_import_leaves_no_empty_memory(api: ApiClient) -> None:
    before = {m["id"] for m in api.get("/v1/memories", params={"limit": 100}).json["data"]}
    body = "\n".join([*_export_lines(2, exported_id="mem_http"), '{"type":"entry","id":"x","content":"c",'
                      '"created_at":"2024-01-01T00:00:00Z","updated_at":"2024-01-01T00:00:00Z","embedding":[NaN]}'])
    r = api.request("POST", "/v1/memories/import", body=body.encode(), headers={"content-type": "application/x-ndjson"})
    assert r.status == 422 and "line 5" in r.json["error"]["message"], r.json
    assert {m["id"] for m in api.get("/v1/memories", params={"limit": 100}).json["data"]} == before
