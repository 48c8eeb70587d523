"""The API and search Lambdas called exactly as the Lambda runtime calls them."""

from __future__ import annotations

import json

from memory_engine.bootstrap import Container
from memory_engine.local.lambda_runtime import LocalLambdaContext, load_handler

# A verbatim API Gateway HTTP API (payload format 2.0) event, as AWS documents it.
HEALTH_EVENT = {
    "version": "2.0",
    "routeKey": "$default",
    "rawPath": "/v1/health",
    "rawQueryString": "",
    "headers": {"accept": "*/*", "host": "abc123.execute-api.us-east-1.amazonaws.com", "user-agent": "curl/8.5.0",
                "x-amzn-trace-id": "Root=1-5e6722a7-cc56xmpl46db7ae02d4da47e", "x-forwarded-for": "203.0.113.7",
                "x-forwarded-port": "443", "x-forwarded-proto": "https"},
    "requestContext": {
        "accountId": "123456789012", "apiId": "abc123", "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
        "domainPrefix": "abc123",
        "http": {"method": "GET", "path": "/v1/health", "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7",
                 "userAgent": "curl/8.5.0"},
        "requestId": "JKJaXmPLvHcESHA=", "routeKey": "$default", "stage": "$default",
        "time": "10/Mar/2026:05:16:23 +0000", "timeEpoch": 1773119783000,
    },
    "isBase64Encoded": False,
}


def test_api_handler_answers_health_from_a_real_http_api_event(container: Container) -> None:
    response = load_handler("api/handler")(HEALTH_EVENT, LocalLambdaContext(function_name="memory-engine-api"))
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["database"] is True


def test_search_handler_rejects_a_request_without_a_key(container: Container) -> None:
    event = json.loads(json.dumps(HEALTH_EVENT))
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/knowledge/search"
    event["requestContext"]["http"]["method"] = "POST"
    event["body"] = json.dumps({"query": "anything"})
    response = load_handler("search/handler")(event, LocalLambdaContext(function_name="memory-engine-search"))
    assert response["statusCode"] == 401
    assert json.loads(response["body"])["error"]["code"] == "unauthorized"
