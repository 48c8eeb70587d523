"""The local blob store's prefix delete: exactly the keys under the prefix, data and metadata."""

from __future__ import annotations

from pathlib import Path

from memory_engine.local.adapters.blob_store import LocalBlobStore


def test_delete_prefix_removes_exactly_the_keys_under_it(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    keys = ["work/doc_1/pages.json", "work/doc_1/chunks/0.json", "work/doc_12/pages.json", "work/doc_2/pages.json",
            "uploads/doc_1.pdf"]
    for key in keys:
        store.put(key, b"x", content_type="application/json")
    assert store.delete_prefix("work/doc_1/") == 2
    assert [k for k in keys if store.head(k) is not None] == keys[2:]
    # a prefix that is not a folder matches key starts, as on S3
    assert store.delete_prefix("work/doc_") == 2
    assert store.head("uploads/doc_1.pdf") is not None
    assert store.delete_prefix("nothing/here/") == 0
    # and their metadata went with them
    left = sorted(p.relative_to(tmp_path / ".meta").as_posix() for p in (tmp_path / ".meta").rglob("*") if p.is_file())
    assert all(not name.startswith("work/") for name in left) and any(name.startswith("uploads/") for name in left)
