"""`memory-engine reembed` repairs rows stored without a vector."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import psycopg

from memory_engine.bootstrap import Container
from memory_engine.domain.entries import EntityRef, NewEntry
from memory_engine.ports.chat import NoChatModel
from memory_engine.services.write_entry import write_entry
from tests.support.memories import FailingEmbedder


def test_reembed_repairs_entries_and_entities_written_while_the_model_was_down(
    container: Container, embedder, database_url: str  # type: ignore[no-untyped-def]
) -> None:
    # Given facts written while the embedding model was down
    project_id = container.projects.get_or_create_project("acme").id
    memory = container.memories.create(project_id, name="repair")
    down = FailingEmbedder()
    for content, entities, conversation in [("Erin lives in Oslo.", [EntityRef(name="Erin", type="person")], None),
                                            ("The build server is called zeus.", [], None),
                                            ("Yes, since last spring!", [EntityRef(name="Erin", type="person")], "c1")]:
        result = write_entry(container.entries, down, NoChatModel(), project_id=project_id,
                             entry=NewEntry(memory_id=memory.id, content=content, subject="Erin" if entities else None,
                                            entities=entities, source_conversation_id=conversation))
        assert result.action == "created"
    with psycopg.connect(database_url) as conn:
        conn.execute("INSERT INTO episodes (id, project_id, transcript) VALUES ('epi_t1', %s, 'user: hi')", (project_id,))
    # When `memory-engine reembed` runs
    env = {**os.environ, "DATABASE_URL": database_url}
    dry = subprocess.run([sys.executable, "-m", "memory_engine.cli", "reembed", "--dry-run"],
                         env=env, capture_output=True, text=True, timeout=180)
    assert dry.returncode == 0, dry.stderr
    assert "memory_entries: 3 row(s)" in dry.stdout and "entities: 1 row(s)" in dry.stdout
    done = subprocess.run([sys.executable, "-m", "memory_engine.cli", "reembed", "--batch-size", "1"],
                          env=env, capture_output=True, text=True, timeout=180)
    # Then it printed progress and every row has its vector, entries embedded anchor-enriched
    assert done.returncode == 0, done.stderr
    assert "memory_entries: 1/3 re-embedded" in done.stdout and "memory_entries: 3/3 re-embedded" in done.stdout
    assert "done: memory_entries 3, entities 1, episodes 1, document_chunks 0" in done.stdout
    with psycopg.connect(database_url) as conn:
        missing = conn.execute(
            "SELECT (SELECT count(*) FROM memory_entries WHERE embedding IS NULL)"
            " + (SELECT count(*) FROM entities WHERE embedding IS NULL)"
            " + (SELECT count(*) FROM episodes WHERE embedding IS NULL)").fetchone()
        stored = conn.execute("SELECT embedding::text FROM memory_entries WHERE content = 'Erin lives in Oslo.'").fetchone()
        turn = conn.execute("SELECT embedding::text FROM memory_entries WHERE content = 'Yes, since last spring!'").fetchone()
        window = conn.execute("SELECT start_char, end_char, embedding = (SELECT embedding FROM episodes WHERE id = 'epi_t1')"
                              " FROM episode_windows WHERE episode_id = 'epi_t1'").fetchall()
    assert missing == (0,)
    assert window == [(0, len("user: hi"), True)]  # the repaired episode is found by vector again
    vector = np.array(json.loads(stored[0]), dtype=np.float32)  # type: ignore[index]
    assert float(vector @ embedder.embed_document("Erin lives in Oslo. About: Erin.")) > 0.999
    # (a conversation's turn as its transcript line, as a write embeds it)
    turn_vector = np.array(json.loads(turn[0]), dtype=np.float32)  # type: ignore[index]
    assert float(turn_vector @ embedder.embed_document("Erin: Yes, since last spring! About: Erin.")) > 0.999
    # And a second run has nothing to do
    again = subprocess.run([sys.executable, "-m", "memory_engine.cli", "reembed"],
                           env=env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0 and "done: memory_entries 0, entities 0" in again.stdout
