"""What a search of a project leaves out and checks, from what the last check of it found."""

from __future__ import annotations

from typing import Any

from memory_engine.adapters.postgres.search_presence import DocumentPresence


def test_a_project_never_checked_is_searched_whole_and_checked() -> None:
    assert DocumentPresence().plan("proj_a") == (False, True)


def test_a_project_seen_without_chunks_leaves_its_documents_out_and_checks_every_search() -> None:
    presence = DocumentPresence(recheck_s=3600)
    presence.record("proj_a", has_chunks=False)
    assert presence.plan("proj_a") == (True, True)
    assert presence.plan("proj_b") == (False, True)


def test_a_project_seen_with_chunks_is_searched_whole_and_checked_again_only_when_due() -> None:
    presence = DocumentPresence(recheck_s=3600)
    presence.record("proj_a", has_chunks=True)
    assert presence.plan("proj_a") == (False, False)
    due = DocumentPresence(recheck_s=0)
    due.record("proj_a", has_chunks=True)
    assert due.plan("proj_a") == (False, True)


def test_the_record_is_bounded() -> None:
    presence = DocumentPresence(max_projects=2)
    for project in ("p1", "p2", "p3"):
        presence.record(project, has_chunks=False)
    assert presence.plan("p3") == (True, True)
    assert presence.plan("p1") == (False, True)  # forgotten: checked again, documents searched


class _Conn:
    def __init__(self, has_chunks: bool) -> None:
        self.has_chunks = has_chunks
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def execute(self, sql: str, params: dict[str, Any]) -> _Conn:
        self.sent.append((sql, params))
        return self

    def fetchone(self) -> dict[str, Any]:
        return {"has_chunks": self.has_chunks}


def test_the_check_runs_after_the_task_on_its_connection() -> None:
    answer: list[bool] = []
    conn = _Conn(has_chunks=True)
    task = DocumentPresence.checking(lambda c: ["fact list"], "proj_a", answer)
    assert task(conn) == ["fact list"]  # type: ignore[arg-type]
    assert answer == [True]
    assert conn.sent[0][1] == {"project_id": "proj_a"} and "document_chunks" in conn.sent[0][0]
