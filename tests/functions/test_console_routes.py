"""The web console's static files, served by the API Lambda from a real HTTP API event (no key needed),
with their content types, a strict Content-Security-Policy and revalidation headers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_engine.bootstrap import Container
from memory_engine.http.console import console_files
from memory_engine.local.apigw_events import http_api_event
from memory_engine.local.lambda_runtime import LocalLambdaContext, load_handler


def get(path: str, **headers: str) -> dict[str, Any]:
    event = http_api_event("GET", path, headers={"host": "abc123.execute-api.us-east-1.amazonaws.com", **headers})
    response: dict[str, Any] = load_handler("api/handler")(event, LocalLambdaContext(function_name="memory-engine-api"))
    response["headers"] = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    return response


@pytest.mark.parametrize(("path", "content_type", "marker"), [
    ("/console/", "text/html; charset=utf-8", "<title>memory-engine console</title>"),
    ("/console/index.html", "text/html; charset=utf-8", 'id="login-form"'),
    ("/console/console.js", "text/javascript; charset=utf-8", "sessionStorage"),
    ("/console/console.css", "text/css; charset=utf-8", "--accent"),
])
def test_each_console_file_is_served_without_a_key_with_its_type_and_a_strict_csp(
    container: Container, path: str, content_type: str, marker: str
) -> None:
    # Given no Authorization header at all, When the browser asks for a console file
    response = get(path)
    # Then it gets the file with its content type
    assert response["statusCode"] == 200, response
    assert response["headers"]["content-type"] == content_type
    assert marker in response["body"]
    # And the CSP allows this origin's scripts and styles only: no inline code, no framing, no form posts
    csp = dict(part.strip().split(" ", 1) for part in response["headers"]["content-security-policy"].split(";"))
    assert csp["default-src"] == "'none'"
    assert csp["script-src"] == "'self'" and csp["style-src"] == "'self'"
    assert csp["connect-src"] == "'self'"  # no documents bucket locally
    assert csp["frame-ancestors"] == "'none'" and csp["form-action"] == "'none'"
    assert response["headers"]["x-content-type-options"] == "nosniff"
    assert response["headers"]["referrer-policy"] == "no-referrer"
    # And browsers revalidate (no hashed file names without a build step), cheaply with the ETag
    assert response["headers"]["cache-control"] == "no-cache"
    again = get(path, **{"If-None-Match": response["headers"]["etag"]})
    assert again["statusCode"] == 304 and not again["body"]


def test_console_without_slash_redirects_and_unknown_files_are_404(container: Container) -> None:
    redirect = get("/console")
    assert redirect["statusCode"] == 308 and redirect["headers"]["location"] == "/console/"
    for path in ("/console/nope.js", "/console/..", "/console/%2e%2e%2fapp.py", "/console/x/../../v1/health"):
        response = get(path)
        assert response["statusCode"] == 404, path
        assert json.loads(response["body"])["error"]["code"] == "not_found"


def test_only_the_packaged_static_files_are_servable() -> None:
    assert set(console_files()) == {"index.html", "console.css", "console.js", "page.js", "memories.js", "documents.js",
                                    "search.js", "runs.js"}


def test_the_console_is_not_part_of_the_api_document(container: Container) -> None:
    body = json.loads(get("/v1/openapi.json")["body"])
    assert not [p for p in body["paths"] if p.startswith("/console")]
    assert "/v1/extraction-runs" in body["paths"]


def test_on_aws_the_csp_lets_the_page_put_presigned_uploads_to_the_documents_bucket(container: Container) -> None:
    # Given a deployment with a documents bucket (the presigned upload URLs point at it)
    settings = container.settings.model_copy(update={"documents_bucket": "me-docs", "aws_region": "eu-west-1"})
    aws = Container(settings, database=container.database)
    from memory_engine.bootstrap import set_container
    from memory_engine.http.console import content_security_policy

    set_container(aws)
    try:
        csp = content_security_policy()
    finally:
        set_container(container)
    connect = next(part for part in csp.split("; ") if part.startswith("connect-src"))
    assert connect == "connect-src 'self' https://me-docs.s3.amazonaws.com https://me-docs.s3.eu-west-1.amazonaws.com"


def test_on_aws_the_served_api_document_lists_no_local_only_route(container: Container) -> None:
    from memory_engine.bootstrap import set_container
    from memory_engine.settings import Runtime

    local = json.loads(get("/v1/openapi.json")["body"])
    # Given the API function deployed on AWS, where API Gateway routes no local-only path
    aws = Container(container.settings.model_copy(update={
        "runtime": Runtime.AWS, "documents_bucket": "me-docs", "event_bus_name": "me-bus",
        "state_machine_arn": "arn:aws:states:us-east-1:123456789012:stateMachine:me"}), database=container.database)
    set_container(aws)
    try:
        deployed = json.loads(get("/v1/openapi.json")["body"])
    finally:
        set_container(container)
    # Then its document leaves out the event endpoint and the local upload/download URLs, and only them
    assert set(local["paths"]) - set(deployed["paths"]) == {
        "/v1/events", "/v1/local-uploads/{token}", "/v1/local-downloads/{token}"}
