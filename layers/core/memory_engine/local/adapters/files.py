"""Atomic file writes for the local stand-ins (blob store, upload URL): readers never see half a file;
and the local secret files (upload-token key)."""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from pathlib import Path


def atomic_write(target: Path, data: bytes, *, staging_dir: Path | None = None) -> None:
    """Write ``data`` to a temporary file (in ``staging_dir``, default the target's folder, which
    must be on the same filesystem) and rename it over ``target``. Raises OSError."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_dir or target.parent
    staging.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=staging, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_or_create_secret(path: Path, *, nbytes: int = 32) -> bytes:
    """The secret in ``path``, generated (``nbytes`` random bytes) on first use. The file is
    created with mode 0600 atomically (``O_EXCL``: two processes starting at once agree on one
    secret) and tightened to 0600 if it was found looser. Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)
        for _ in range(50):  # another process may be writing it right now
            data = path.read_bytes()
            if len(data) >= nbytes:
                return data
            time.sleep(0.01)
        raise OSError(f"secret file {path.name} is too short; delete it to generate a new one") from None
    with os.fdopen(fd, "wb") as out:
        data = secrets.token_bytes(nbytes)
        out.write(data)
    return data
