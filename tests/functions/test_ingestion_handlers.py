"""The ingestion Lambda handlers with real EventBridge S3 event JSON against moto S3, chained
the way the state machine chains them (each Payload is the next step's input)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memory_engine.adapters.s3.blob_store import S3BlobStore
from memory_engine.bootstrap import Container, set_container
from memory_engine.local.lambda_runtime import LocalLambdaContext, load_handler
from memory_engine.settings import Settings
from tests.support.ingestion import object_created_event

BUCKET = "memory-engine-documents-test"


@pytest.fixture(scope="module")
def container(database_url: str, embedder, chat_model) -> Iterator[Container]:  # type: ignore[no-untyped-def]
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        settings = Settings(DATABASE_URL=database_url, DOCUMENTS_BUCKET=BUCKET, MEMORY_ENGINE_RUNTIME="aws")  # type: ignore[call-arg]
        built = Container(settings, embedder=embedder, chat_model=chat_model, blob_store=S3BlobStore(s3, BUCKET))
        set_container(built)
        yield built
        set_container(None)
        built.close()


def call(attribute: str, payload: dict[str, Any]) -> dict[str, Any]:
    # through JSON, as Step Functions passes payloads
    result: dict[str, Any] = load_handler("ingestion/handler", attribute)(
        json.loads(json.dumps(payload)), LocalLambdaContext(function_name=attribute))
    return json.loads(json.dumps(result))


def test_handlers_chain_from_an_s3_event_to_ready(container: Container) -> None:
    project = container.projects.get_or_create_project("acme")
    s3 = container.blob_store._s3
    key = f"projects/{project.id}/handbook/intro.md"
    text = "# Intro\n\n" + "\n\n".join(f"Rule {i}: always write tests for step {i}." for i in range(80))
    s3.put_object(Bucket=BUCKET, Key=key, Body=text.encode(), ContentType="text/markdown")
    event = object_created_event(BUCKET, key, len(text))

    run = call("register", event)
    assert run["skip"] is False and run["generation"] == 1
    run = call("extract", run)
    assert run["total_pages"] == 1 and run["pages_key"].startswith(f"_work/{run['document_id']}/1/")
    run = call("chunk", run)
    assert run["total_chunks"] == len(run["batches"]) == 1
    for batch in run["batches"]:  # the Map's ItemSelector shape
        item = {"project_id": run["project_id"], "document_id": run["document_id"], "generation": run["generation"],
                "batch": batch}
        assert call("embed_batch", item)["indexed_chunks"] == batch["count"]
    assert call("finalize", run)["skip"] is False
    doc = container.documents.get(project.id, run["document_id"])
    assert doc.status.value == "ready" and doc.source_bucket == BUCKET and doc.content_type == "text/markdown"
    # the work objects are gone, the upload stays
    listed = s3.list_objects_v2(Bucket=BUCKET)["Contents"]
    assert [o["Key"] for o in listed] == [key]
    # and the redelivered event is a no-op at Register
    assert call("register", event)["skip"] is True


def test_register_failure_is_marked_from_the_raw_event(container: Container) -> None:
    # Given an object whose key names no known project (Register raises InvalidObjectKey)
    key = "projects/proj_UNKNOWN/file.txt"
    container.blob_store.put(key, b"hello")
    event = object_created_event(BUCKET, key, 5)
    with pytest.raises(Exception) as caught:
        call("register", event)
    assert type(caught.value).__name__ == "InvalidObjectKey"
    # When the Catch hands the event plus the failure to mark_failed
    failure = {"Error": "InvalidObjectKey", "Cause": json.dumps({"errorMessage": str(caught.value),
                                                                 "errorType": "InvalidObjectKey"})}
    result = call("mark_failed", {**event, "failure": failure})
    # Then nothing is stuck and the reason is reported
    assert result["marked"] is False and "does not exist" in result["error"]


def test_extract_failure_marks_the_document_failed_with_the_message(container: Container) -> None:
    project = container.projects.get_or_create_project("acme")
    key = f"projects/{project.id}/broken.pdf"
    container.blob_store.put(key, b"%PDF-1.7\n garbage that is not a pdf body", content_type="application/pdf")
    run = call("register", object_created_event(BUCKET, key, 40))
    with pytest.raises(Exception) as caught:
        call("extract", run)
    assert type(caught.value).__name__ == "DocumentUnreadable"
    failure = {"Error": "DocumentUnreadable", "Cause": json.dumps({"errorMessage": str(caught.value)})}
    result = call("mark_failed", {**run, "failure": failure})
    doc = container.documents.get(project.id, run["document_id"])
    assert result["marked"] is True and doc.status.value == "failed" and doc.error == str(caught.value)
    assert "corrupt" in (doc.error or "")
