"""The documents API through the real API Lambda handler (API Gateway v2 events), the local
upload route and the drop-folder watcher: one upload flow in the local shape."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from memory_engine.bootstrap import Container
from memory_engine.local.drop_folder import DropFolderWatcher
from tests.support.api_client import ApiClient

TEXT = "\n\n".join(f"Section {i}. Knowledge about the fjord number {i} and its glaciers." for i in range(30))



def test_create_from_text_waits_until_ready_and_reports_status(api: ApiClient) -> None:
    r = api.post("/v1/documents", {"path": "docs/fjords.md", "content": TEXT, "tags": ["geo"], "wait": True})
    assert r.status == 201, r.json
    doc = r.json
    assert doc["path"] == "/docs/fjords.md" and doc["status"] == "ready" and doc["chunk_strategy"] == "whole"
    assert doc["content_type"] == "text/markdown" and doc["tags"] == ["geo"]
    status = api.get(f"/v1/documents/{doc['id']}/status").json
    assert status == {"status": "ready", "total_pages": 1, "total_chunks": 1, "indexed_chunks": 1, "progress": 1.0,
                      "error": None}
    # the same text at the same path is a no-op
    again = api.post("/v1/documents", {"path": "/docs/fjords.md", "content": TEXT})
    assert again.status == 200 and again.json["id"] == doc["id"]


def test_reingest_with_new_chunk_settings(api: ApiClient) -> None:
    doc = api.post("/v1/documents", {"path": "/docs/reingest.txt", "content": TEXT, "wait": True}).json
    r = api.post(f"/v1/documents/{doc['id']}/ingest",
                 {"chunk_strategy": "size", "chunk_size": 300, "chunk_overlap": 50, "wait": True})
    assert r.status == 200, r.json
    assert r.json["status"] == "ready" and r.json["chunk_strategy"] == "size" and r.json["total_chunks"] > 1
    assert r.json["active_generation"] == doc["active_generation"] + 1


def test_list_filters_and_paginates(api: ApiClient) -> None:
    for i in range(3):
        api.post("/v1/documents", {"path": f"/list/n{i}.txt", "content": f"note {i}", "tags": [f"t{i}", "list"],
                                   "wait": True})
    first = api.get("/v1/documents", params={"path_prefix": "/list/", "limit": 2}).json
    assert [d["path"] for d in first["data"]] == ["/list/n2.txt", "/list/n1.txt"] and first["next_cursor"]
    second = api.get("/v1/documents", params={"path_prefix": "/list/", "limit": 2, "cursor": first["next_cursor"]}).json
    assert [d["path"] for d in second["data"]] == ["/list/n0.txt"] and second["next_cursor"] is None
    tagged = api.get("/v1/documents", params={"tags": "t1,t2"}).json["data"]
    assert sorted(d["path"] for d in tagged) == ["/list/n1.txt", "/list/n2.txt"]
    ready = api.get("/v1/documents", params={"status": "ready", "path_prefix": "/list"}).json["data"]
    assert len(ready) == 3


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/v1/documents", {"path": "/x.txt", "content": "a", "chunk_size": 100, "chunk_overlap": 100}, 422),
        ("POST", "/v1/documents", {"path": "/../etc/passwd", "content": "a"}, 422),
        ("POST", "/v1/documents", {"path": "/x.txt", "content": "   "}, 422),
        ("POST", "/v1/documents", {"path": "/x.txt", "content": "a", "chunk_strategy": "tokens"}, 422),
        ("GET", "/v1/documents?status=done", None, 422),
        ("GET", "/v1/documents?cursor=%%%", None, 422),
        ("GET", "/v1/documents/doc_missing", None, 404),
        ("GET", "/v1/documents/doc_missing/status", None, 404),
        ("POST", "/v1/documents/doc_missing/ingest", {}, 404),
    ],
)
def test_bad_input_is_a_clear_4xx(api: ApiClient, method: str, path: str, body: object, status: int) -> None:
    url = urlsplit(path)
    params = dict(p.split("=", 1) for p in url.query.split("&")) if url.query else None
    r = api.request(method, url.path, json_body=body, params=params)
    assert r.status == status, r.json
    assert r.json["error"]["message"]


def test_another_projects_document_is_404_and_delete_removes_it(api: ApiClient, make_key) -> None:  # type: ignore[no-untyped-def]
    doc = api.post("/v1/documents", {"path": "/private.txt", "content": "secret", "wait": True}).json
    other = ApiClient(make_key("globex", "read,write"))
    assert other.get(f"/v1/documents/{doc['id']}").status == 404
    assert other.delete(f"/v1/documents/{doc['id']}").status == 404
    assert other.get("/v1/documents").json["data"] == []
    assert api.delete(f"/v1/documents/{doc['id']}").status == 204
    assert api.get(f"/v1/documents/{doc['id']}").status == 404


def test_upload_url_put_and_drop_folder_run_the_same_pipeline(api: ApiClient, container: Container) -> None:
    # Given an upload URL for a markdown file with tags and the recursive chunker
    r = api.post("/v1/documents/uploads", {"path": "/up/guide.md", "tags": ["guide"], "chunk_strategy": "recursive",
                                           "chunk_size": 200}, headers={"host": "127.0.0.1:8787"})
    assert r.status == 201, r.json
    upload = r.json
    assert upload["method"] == "PUT" and upload["upload_url"].startswith("http://127.0.0.1:8787/v1/local-uploads/")
    assert upload["key"].startswith("projects/proj_") and upload["key"].endswith("/up/guide.md")
    assert upload["headers"] == {"Content-Type": "text/markdown"} and upload["expires_at"]  # never the caller's key
    pending = api.get("/v1/documents", params={"path_prefix": "/up/"}).json["data"]
    assert [d["status"] for d in pending] == ["pending"]
    # When the client PUTs the bytes with the returned headers: the signed URL alone authorizes it,
    # like a presigned S3 URL (and a token altered to point elsewhere does not)
    url_path = urlsplit(upload["upload_url"]).path
    tampered = url_path.replace("/v1/local-uploads/", "/v1/local-uploads/x")
    assert ApiClient(None).request("PUT", tampered, body=b"x", headers={"content-type": "text/markdown"}).status == 403
    put = ApiClient(None).request("PUT", url_path, body=TEXT.encode(), headers=upload["headers"])
    assert put.status == 200, put.json
    dropped = container.settings.drop_dir / "acme" / "up" / "guide.md"
    assert dropped.read_text() == TEXT
    # And the drop-folder watcher sees the file stable and starts the run
    watcher = DropFolderWatcher(container, container.settings.drop_dir, stable_seconds=1.0)
    assert watcher.scan(now=100.0) == []  # first sighting: not yet known to be complete
    run_ids = watcher.scan(now=101.5)
    assert len(run_ids) == 1
    result = container.pipeline_starter.result(run_ids[0], timeout=60)
    assert result.status == "succeeded", result.error
    # Then the document is ready with the settings chosen at upload time
    doc = api.get("/v1/documents", params={"path_prefix": "/up/"}).json["data"][0]
    assert doc["status"] == "ready" and doc["chunk_strategy"] == "recursive" and doc["tags"] == ["guide"]
    assert doc["content_type"] == "text/markdown" and doc["total_chunks"] > 1
    # And an unchanged file seen again is not taken twice
    assert watcher.scan(now=110.0) == []


def test_a_file_being_written_is_not_taken_until_stable(container: Container) -> None:
    root = container.settings.home / "drop-slow"  # a folder of its own: nothing else to pick up
    container.projects.get_or_create_project("acme")  # the drop folder never creates projects
    target = root / "acme" / "slow" / "part.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    watcher = DropFolderWatcher(container, root, stable_seconds=1.0)
    target.write_text("first half")
    assert watcher.scan(now=0.0) == []
    with target.open("a") as f:
        f.write(" and the second half")
    assert watcher.scan(now=5.0) == []  # changed since last scan: wait again
    runs = watcher.scan(now=6.5)
    assert len(runs) == 1
    target.unlink()  # deleting the dropped file during ingestion must not matter: the pipeline reads its copy
    result = container.pipeline_starter.result(runs[0], timeout=60)
    assert result.status == "succeeded", result.error
    doc = container.documents.find_by_path(container.projects.get_project("acme").id, "/slow/part.txt")  # type: ignore[union-attr]
    assert doc is not None and doc.status.value == "ready" and doc.size_bytes == len("first half and the second half")


def test_batch_creates_each_item_on_its_own_and_rejects_only_the_bad_ones(api: ApiClient) -> None:
    # Given a batch with three good documents, an empty one, a path outside the tree and a duplicate path
    items = [
        {"path": "/batch/a.md", "content": "Alpha fjords hold deep water.", "tags": ["b"]},
        {"path": "/batch/b.txt", "content": "Beta glaciers carve valleys."},
        {"path": "/batch/empty.txt", "content": ""},
        {"path": "/../escape.txt", "content": "x"},
        {"path": "/batch/a.md", "content": "a second text at the same path"},
        {"path": "/batch/c.txt", "content": "Gamma moraines mark old ice.", "chunk_strategy": "size", "chunk_size": 100},
    ]
    r = api.post("/v1/documents/batch", {"documents": items})
    # Then it answers 200 with one result per item, in order, and only the bad items rejected
    assert r.status == 200, r.json
    results = r.json["results"]
    assert [x["index"] for x in results] == list(range(6))
    assert [x["action"] for x in results] == ["created", "created", "rejected", "rejected", "rejected", "created"]
    assert (r.json["created"], r.json["unchanged"], r.json["rejected"]) == (3, 0, 3)
    assert results[2]["error"]["code"] == "validation_error" and results[2]["error"]["details"][0]["field"] == "content"
    assert results[3]["error"]["details"][0]["field"] == "path"
    assert "item 0" in results[4]["error"]["message"]
    assert results[0]["document"]["path"] == "/batch/a.md" and results[0]["document"]["tags"] == ["b"]
    # And the created documents become ready, each with its own settings
    for result in (results[0], results[1], results[5]):
        doc_id = result["document"]["id"]
        deadline = time.monotonic() + 60
        while (doc := _doc(api, doc_id))["status"] == "processing" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert doc["status"] == "ready", doc
    assert _doc(api, results[5]["document"]["id"])["chunk_strategy"] == "size"
    # And the same batch again changes nothing for the stored items
    again = api.post("/v1/documents/batch", {"documents": items[:2]})
    assert [x["action"] for x in again.json["results"]] == ["unchanged", "unchanged"]


@pytest.mark.parametrize("body", [{"documents": []}, {"documents": [{"path": "/x.txt", "content": "x"}] * 101},
                                  {"documents": "no"}, {"items": []}])
def test_batch_envelope_is_validated(api: ApiClient, body: object) -> None:
    r = api.post("/v1/documents/batch", body)
    assert r.status == 422, r.json
    assert r.json["error"]["code"] == "validation_error"


def _doc(api: ApiClient, doc_id: str) -> dict:  # type: ignore[type-arg]
    return api.get(f"/v1/documents/{doc_id}").json  # type: ignore[no-any-return]


def test_a_deleted_upload_does_not_come_back_after_a_restart(api: ApiClient, container: Container) -> None:
    # Given a document that came in through an upload URL (its bytes left in drop/<project>/<path>)
    upload = api.post("/v1/documents/uploads", {"path": "/up/deleted.md"}).json
    put = ApiClient(None).request("PUT", urlsplit(upload["upload_url"]).path, body=b"# Gone\n\nforget me",
                                  headers=upload["headers"])
    assert put.status == 200, put.json
    dropped = container.settings.drop_dir / "acme" / "up" / "deleted.md"
    watcher = DropFolderWatcher(container, container.settings.drop_dir, stable_seconds=1.0)
    watcher.scan(now=200.0)
    runs = watcher.scan(now=201.5)
    assert len(runs) == 1 and container.pipeline_starter.result(runs[0], timeout=60).status == "succeeded"
    doc = api.get("/v1/documents", params={"path_prefix": "/up/deleted"}).json["data"][0]
    # When it is deleted
    assert api.delete(f"/v1/documents/{doc['id']}").status == 204
    # Then every copy is gone, the drop folder's too
    assert not dropped.exists()
    # And after a restart (a new watcher, nothing remembered) nothing is ingested again
    restarted = DropFolderWatcher(container, container.settings.drop_dir, stable_seconds=1.0)
    assert restarted.scan(now=300.0) == [] and restarted.scan(now=301.5) == []
    assert api.get("/v1/documents", params={"path_prefix": "/up/deleted"}).json["data"] == []
    assert api.get(f"/v1/documents/{doc['id']}").status == 404


def test_deleting_a_document_keeps_a_newer_file_at_its_path(api: ApiClient, container: Container) -> None:
    # Given a dropped file's document, and the file changed since (a new version not yet ingested)
    upload = api.post("/v1/documents/uploads", {"path": "/up/changed.md"}).json
    ApiClient(None).request("PUT", urlsplit(upload["upload_url"]).path, body=b"first version", headers=upload["headers"])
    watcher = DropFolderWatcher(container, container.settings.drop_dir, stable_seconds=1.0)
    watcher.scan(now=400.0)
    runs = watcher.scan(now=401.5)
    assert len(runs) == 1 and container.pipeline_starter.result(runs[0], timeout=60).status == "succeeded"
    dropped = container.settings.drop_dir / "acme" / "up" / "changed.md"
    dropped.write_text("second version")
    doc = api.get("/v1/documents", params={"path_prefix": "/up/changed"}).json["data"][0]
    # When the document is deleted, Then the newer file stays (it is the user's, not the engine's copy)
    assert api.delete(f"/v1/documents/{doc['id']}").status == 204
    assert dropped.read_text() == "second version"
