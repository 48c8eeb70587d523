"""receive_upload with fakes of its ports (no files, no database): the token is the credential, the
project must still exist and have a folder name, and the inbox gets exactly the granted path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory_engine.domain.upload_tokens import InvalidUploadToken, UploadGrant
from memory_engine.errors import Conflict, Forbidden, NotFound
from memory_engine.ports.projects import ApiKeyRecord, Project
from memory_engine.services.ingestion.uploads import StoredUpload, receive_upload

NOW = datetime(2025, 1, 1, tzinfo=UTC)
GRANT = UploadGrant(key="projects/prj_1/docs/a.pdf", project_id="prj_1", path="/docs/a.pdf",
                    expires_at=NOW + timedelta(hours=1))


class FakeInbox:
    def __init__(self, grant: UploadGrant | None = GRANT) -> None:
        self.grant = grant
        self.received: list[tuple[str, str, bytes]] = []

    def verify(self, token: str) -> UploadGrant:
        if self.grant is None or token != "good":
            raise InvalidUploadToken("bad signature")
        return self.grant

    def receive(self, folder: str, path: str, data: bytes) -> None:
        self.received.append((folder, path, data))


class FakeProjects:
    def __init__(self, *projects: Project) -> None:
        self._projects = {p.id: p for p in projects}

    def get_or_create_project(self, name: str) -> Project:
        raise NotImplementedError

    def get_project(self, name_or_id: str) -> Project | None:
        return self._projects.get(name_or_id)

    def list_projects(self) -> list[Project]:
        return list(self._projects.values())

    def insert_key(self, *args: object, **kwargs: object) -> ApiKeyRecord:
        raise NotImplementedError

    def find_key_by_hash(self, key_hash: str) -> ApiKeyRecord | None:
        return None

    def list_keys(self, project_id: str | None = None) -> list[ApiKeyRecord]:
        return []

    def revoke_key(self, key_id: str) -> bool:
        return False

    def touch_key(self, key_id: str) -> None:
        return None


ACME = Project(id="prj_1", name="acme", created_at=NOW)


def test_a_valid_token_delivers_the_bytes_to_the_projects_folder_at_the_granted_path() -> None:
    inbox = FakeInbox()
    stored = receive_upload(inbox, FakeProjects(ACME), "good", b"%PDF-1.7")
    assert stored == StoredUpload(key=GRANT.key, path="/docs/a.pdf", size=8)
    assert inbox.received == [("acme", "/docs/a.pdf", b"%PDF-1.7")]


def test_a_forged_token_is_forbidden_and_nothing_is_received() -> None:
    inbox = FakeInbox()
    with pytest.raises(Forbidden) as raised:
        receive_upload(inbox, FakeProjects(ACME), "forged", b"x")
    assert raised.value.details == {"reason": "bad signature"}
    assert inbox.received == []


def test_without_an_inbox_or_a_project_the_url_is_not_found() -> None:
    with pytest.raises(NotFound):
        receive_upload(None, FakeProjects(ACME), "good", b"x")
    inbox = FakeInbox()
    with pytest.raises(NotFound):
        receive_upload(inbox, FakeProjects(), "good", b"x")
    assert inbox.received == []


def test_a_project_whose_name_is_no_folder_name_is_a_conflict() -> None:
    inbox = FakeInbox()
    with pytest.raises(Conflict):
        receive_upload(inbox, FakeProjects(Project(id="prj_1", name="../x", created_at=NOW)), "good", b"x")
    assert inbox.received == []
