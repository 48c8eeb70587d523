"""The write funnel on the real database with the real local embedding model."""

from __future__ import annotations

from memory_engine.bootstrap import Container
from memory_engine.domain.entries import EntityRef, NewEntry


def _project(container: Container, name: str = "acme") -> str:
    return container.projects.get_or_create_project(name).id


def test_smoke_create_then_skip(container: Container) -> None:
    pid = _project(container)
    memory = container.memories.create(pid, name="prefs")
    first = container.write_entry(project_id=pid, entry=NewEntry(memory_id=memory.id, content="Alice likes green tea."))
    assert first.action == "created"
    again = container.write_entry(project_id=pid, entry=NewEntry(memory_id=memory.id, content="Alice likes green tea."))
    assert again.action == "skipped" and again.entry.id == first.entry.id
    with_entities = container.write_entry(project_id=pid, entry=NewEntry(
        memory_id=memory.id, content="Bob drives a Toyota Corolla.", subject="Bob", object="Toyota Corolla",
        entities=[EntityRef(name="Bob", type="person"), EntityRef(name=" toyota  Corolla ", type="car")]))
    assert with_entities.action == "created"
    assert [(e.name, e.role) for e in with_entities.entry.entities] == [("Bob", "subject"), ("toyota Corolla", "object")]
