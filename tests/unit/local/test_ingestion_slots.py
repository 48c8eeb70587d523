"""Which run a free ingestion slot takes (local/ingestion_slots.py): the project with the fewest
runs in flight, round-robin between equals, in order within a project, and the reserved slot only
for a project with nothing running."""

from __future__ import annotations

from concurrent.futures import Future

from memory_engine.local.ingestion_slots import _Projects, _Run, run_project
from memory_engine.local.pipeline import PipelineResult


def _run(project: str, name: str) -> _Run:
    def step() -> PipelineResult:
        return PipelineResult("succeeded", {})

    return _Run(project, {"name": name}, Future(), step)


def _names(picked: list[_Run | None]) -> list[str | None]:
    return [None if run is None else run.payload["name"] for run in picked]


def test_one_project_alone_uses_every_slot_but_not_the_reserved_one() -> None:
    projects = _Projects()
    for i in range(5):
        projects.push(_run("a", f"a{i}"))
    assert _names([projects.pick(3, 1) for _ in range(4)]) == ["a0", "a1", "a2", None]


def test_a_project_with_nothing_running_takes_the_reserved_slot() -> None:
    # Given project A holding every slot with more queued
    projects = _Projects()
    for i in range(5):
        projects.push(_run("a", f"a{i}"))
    assert _names([projects.pick(2, 1) for _ in range(2)]) == ["a0", "a1"]
    # When project B queues two runs
    projects.push(_run("b", "b0"))
    projects.push(_run("b", "b1"))
    # Then B's first takes the reserved slot, and nothing more starts while every slot is busy
    assert _names([projects.pick(2, 1), projects.pick(2, 1)]) == ["b0", None]
    # And while the runs in flight fill the workers, a freed slot stays the reserved one
    projects.done("a")
    assert projects.pick(2, 1) is None
    # And a freed slot goes to the project with fewer runs in flight
    projects.done("a")
    assert _names([projects.pick(2, 1), projects.pick(2, 1)]) == ["a2", None]
    projects.done("b")
    assert _names([projects.pick(2, 1)]) == ["b1"]


def test_free_slots_go_round_robin_between_projects_with_queued_work() -> None:
    projects = _Projects()
    for project in ("a", "b", "c"):
        for i in range(3):
            projects.push(_run(project, f"{project}{i}"))
    assert _names([projects.pick(6, 0) for _ in range(6)]) == ["a0", "b0", "c0", "a1", "b1", "c1"]


def test_a_resumed_run_goes_ahead_of_its_projects_new_runs() -> None:
    projects = _Projects()
    projects.push(_run("a", "new"))
    projects.push(_run("a", "resumed"), first=True)
    assert _names([projects.pick(1, 0)]) == ["resumed"]


def test_a_runs_project_comes_from_its_payload_or_its_object_key() -> None:
    assert run_project({"project_id": "p1", "document_id": "d"}) == "p1"
    assert run_project({"detail": {"object": {"key": "projects/p2/notes/a.md"}}}) == "p2"
    assert run_project({"detail": {"object": {"key": "elsewhere/a.md"}}}) == ""
    assert run_project({"detail": "not an object"}) == ""
