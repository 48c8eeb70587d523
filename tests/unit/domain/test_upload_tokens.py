"""Signed local upload tokens, their secret file, the local blob store's errors, and the key cache
(issue 11, defects 3, 9 and 10)."""

from __future__ import annotations

import base64
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_engine.domain.auth import Principal, Scope, hash_key
from memory_engine.domain.upload_tokens import InvalidUploadToken, sign_upload_token, verify_upload_token
from memory_engine.errors import Unauthorized
from memory_engine.local.adapters.blob_store import UPLOAD_SECRET_FILE, LocalBlobStore
from memory_engine.local.adapters.files import read_or_create_secret
from memory_engine.ports.projects import ApiKeyRecord
from memory_engine.services.keys import Authenticator
from memory_engine.settings import Settings

SECRET = b"s" * 32
NOW = datetime(2030, 1, 1, tzinfo=UTC)
KEY = "projects/proj_a/docs/guide.md"


def _token(key: str = KEY, project_id: str = "proj_a", expires_at: datetime = NOW + timedelta(hours=1)) -> str:
    return sign_upload_token(SECRET, key=key, project_id=project_id, expires_at=expires_at)


def test_a_signed_token_grants_its_key_until_it_expires() -> None:
    grant = verify_upload_token(SECRET, _token(), now=NOW)
    assert (grant.key, grant.project_id, grant.path) == (KEY, "proj_a", "/docs/guide.md")
    with pytest.raises(InvalidUploadToken, match="expired"):
        verify_upload_token(SECRET, _token(), now=NOW + timedelta(hours=1))


@pytest.mark.parametrize(
    "token",
    [
        base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("="),  # the old format: base64 of the key
        _token() + "x",
        _token().split(".")[0] + "." + _token(key="projects/proj_a/other.md").split(".")[1],  # swapped signature
        "abc\x00.def",
        "é.é",
        "",
        "a.b.c",
    ],
)
def test_forged_or_malformed_tokens_are_refused(token: str) -> None:
    with pytest.raises(InvalidUploadToken):
        verify_upload_token(SECRET, token, now=NOW)


def test_another_secret_or_a_path_outside_the_rules_never_verifies() -> None:
    with pytest.raises(InvalidUploadToken):
        verify_upload_token(b"t" * 32, _token(), now=NOW)
    for key, project in [("projects/proj_a/a//b.md", "proj_a"), ("projects/proj_a/.meta/x", "proj_a"),
                         ("projects/proj_a/a\nb.md", "proj_a"), ("projects/proj_b/x.md", "proj_a"),
                         ("projects/proj_a/" + "a" * 300, "proj_a")]:
        with pytest.raises(InvalidUploadToken):
            verify_upload_token(SECRET, _token(key=key, project_id=project), now=NOW)


def test_the_secret_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "home" / UPLOAD_SECRET_FILE
    first = read_or_create_secret(path)
    assert len(first) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_or_create_secret(path) == first
    path.chmod(0o644)  # found too open: tightened
    assert read_or_create_secret(path) == first and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_local_store_signs_urls_it_alone_can_verify(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    upload = store.presign_put(KEY, content_type="text/markdown", expires_in=60)
    assert upload.headers == {"Content-Type": "text/markdown"}  # never a credential
    token = upload.url.rsplit("/", 1)[1]
    assert store.verify_upload(token).key == KEY
    assert (tmp_path / UPLOAD_SECRET_FILE).exists()
    with pytest.raises(InvalidUploadToken):
        LocalBlobStore(tmp_path / "other" / "blobs").verify_upload(token)
    with pytest.raises(InvalidUploadToken):
        store.verify_upload(token, now=upload.expires_at)


def test_blob_store_names_that_cannot_exist_never_raise_raw_os_errors(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    long_key = "projects/p/" + "a" * 300 + ".md"
    assert store.head(long_key) is None
    store.delete(long_key)  # nothing to delete: no error
    with pytest.raises(Exception) as caught:
        store.put(long_key, b"x")
    assert getattr(caught.value, "code", None) == "blob_store_error"
    assert str(tmp_path) not in caught.value.args[0] and "File name too long" in caught.value.args[0]


# --- the key cache ---------------------------------------------------------------------------------
class _Keys:
    def __init__(self, raw: str) -> None:
        self.record = ApiKeyRecord(id="key_1", project_id="proj_a", name=None, key_prefix=raw[:9],
                                   key_hash=hash_key(raw), scopes=frozenset({Scope.READ}), created_at=NOW,
                                   last_used_at=None, revoked_at=None)

    def find_key_by_hash(self, key_hash: str) -> ApiKeyRecord | None:
        return self.record if key_hash == self.record.key_hash else None

    def touch_key(self, key_id: str) -> None:
        pass


def test_a_revoked_key_stops_working_once_the_cache_ttl_passes() -> None:
    raw = "me_" + "k" * 43
    repo = _Keys(raw)
    clock = [0.0]
    auth = Authenticator(repo, ttl_seconds=Settings().resolved_key_cache_seconds, clock=lambda: clock[0])  # type: ignore[arg-type]
    assert auth.authenticate(f"Bearer {raw}") == Principal("proj_a", "key_1", frozenset({Scope.READ}))
    repo.record = ApiKeyRecord(**{**repo.record.__dict__, "revoked_at": NOW})
    clock[0] = 4.9
    auth.authenticate(f"Bearer {raw}")  # still cached
    clock[0] = 5.0
    with pytest.raises(Unauthorized):
        auth.authenticate(f"Bearer {raw}")


def test_the_key_cache_ttl_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().resolved_key_cache_seconds == 5.0
    monkeypatch.setenv("MEMORY_ENGINE_RUNTIME", "aws")
    assert Settings().resolved_key_cache_seconds == 30.0
    monkeypatch.setenv("MEMORY_ENGINE_KEY_CACHE_SECONDS", "0")
    assert Settings().resolved_key_cache_seconds == 0.0
