from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest

from memory_engine.bootstrap import Container
from memory_engine.domain.auth import Scope
from memory_engine.errors import Forbidden, Unauthorized
from memory_engine.services.keys import Authenticator, authorize, create_api_key, revoke_api_key
from tests.support.api_client import ApiClient


def test_cli_keys_create_prints_a_key_that_authenticates(database_url: str, container: Container) -> None:
    # Given `memory-engine keys create --project acme`
    env = {**os.environ, "DATABASE_URL": database_url}
    done = subprocess.run([sys.executable, "-m", "memory_engine.cli", "keys", "create", "--project", "acme-cli"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    raw_key = done.stdout.strip().splitlines()[-1]
    # Then the last stdout line is the key alone, and it authenticates over HTTP
    assert raw_key.startswith("me_") and " " not in raw_key
    response = ApiClient(raw_key).post("/v1/embeddings", {"input": "hello"})
    assert response.status == 200, response.json
    # And a wrong key gets 401 with the SPEC's error body
    wrong = ApiClient("me_wrong").post("/v1/embeddings", {"input": "hello"})
    assert wrong.status == 401 and wrong.json["error"]["code"] == "unauthorized"
    # And the keys table holds no raw key
    with psycopg.connect(database_url) as conn:
        dump = str(conn.execute("SELECT * FROM api_keys").fetchall())
    assert raw_key not in dump
    # And `keys list` shows the key without revealing it
    listing = subprocess.run([sys.executable, "-m", "memory_engine.cli", "keys", "list", "--project", "acme-cli"],
                             env=env, capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0 and "acme-cli" in listing.stdout and raw_key not in listing.stdout


def test_missing_key_is_401_before_body_validation_and_missing_scope_is_403(make_key) -> None:  # type: ignore[no-untyped-def]
    missing = ApiClient(None).post("/v1/embeddings", {"not": "valid"})
    assert missing.status == 401 and "Authorization" in missing.json["error"]["message"]
    reader = ApiClient(make_key("acme", "read"))
    assert reader.post("/v1/embeddings", {"input": "ok"}).status == 200
    malformed = ApiClient(None).post("/v1/embeddings", {"input": "x"}, headers={"authorization": "Basic abc"})
    assert malformed.status == 401


def test_scopes_are_enforced_and_revocation_takes_effect(container: Container) -> None:
    minted = create_api_key(container.projects, project_name="scoped", scopes=frozenset({Scope.READ}))
    auth = Authenticator(container.projects, ttl_seconds=0)
    principal = auth.authenticate(f"Bearer {minted.raw_key}")
    assert authorize(principal, Scope.READ) is principal
    with pytest.raises(Forbidden, match="'write' scope"):
        authorize(principal, Scope.WRITE)
    revoke_api_key(container.projects, minted.record.id)
    with pytest.raises(Unauthorized):
        auth.authenticate(f"Bearer {minted.raw_key}")


def test_health_needs_no_key_and_reports_the_database(container: Container) -> None:
    response = ApiClient(None).get("/v1/health")
    assert response.status == 200 and response.json["database"] is True


def test_openapi_document_lists_routes_and_bearer_auth(container: Container) -> None:
    response = ApiClient(None).get("/v1/openapi.json")
    assert response.status == 200
    doc = response.json
    assert doc["openapi"].startswith("3.") and "/v1/health" in doc["paths"] and "/v1/embeddings" in doc["paths"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_invalid_json_is_400_and_bad_fields_are_422_with_details(api: ApiClient) -> None:
    bad_json = api.request("POST", "/v1/embeddings", body=b'{"input": ')
    assert bad_json.status == 400 and bad_json.json["error"]["code"] == "bad_request"
    bad_field = api.post("/v1/embeddings", {"inputs": [1]})
    assert bad_field.status == 422 and bad_field.json["error"]["details"][0]["field"] == "inputs.0"
    unknown_route = api.get("/v1/nothing-here")
    assert unknown_route.status == 404 and unknown_route.json["error"]["code"] == "not_found"


def test_a_json_body_sent_as_curl_form_data_is_read_as_json(api: ApiClient) -> None:
    # Given `curl -d '{...}'` without a content type: curl labels the body form-encoded
    response = api.post("/v1/embeddings", {"input": "hello"}, headers={"content-type": "application/x-www-form-urlencoded"})
    # Then the API still reads it as JSON
    assert response.status == 200, response.json
    assert len(response.json["data"][0]["embedding"]) == 384
