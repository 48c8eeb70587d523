"""Atomic file writes for the local stand-ins (blob store, upload URL): readers never see half a file."""

from __future__ import annotations

import os
import tempfile
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
