from __future__ import annotations

import base64

from memory_engine.local.apigw_events import decode_response, http_api_event


def test_builds_a_payload_v2_event_like_api_gateway() -> None:
    event = http_api_event(
        "post", "/v1/memories", query="tags=a&tags=b*&limit=5",
        headers={"Content-Type": "application/json", "Authorization": "Bearer k"}, body=b'{"name":"x"}',
    )
    assert event["version"] == "2.0" and event["routeKey"] == "$default"
    assert event["requestContext"]["http"]["method"] == "POST"
    assert event["requestContext"]["http"]["path"] == "/v1/memories"
    assert event["queryStringParameters"] == {"tags": "a,b*", "limit": "5"}
    assert event["headers"]["authorization"] == "Bearer k"
    assert event["body"] == '{"name":"x"}' and event["isBase64Encoded"] is False


def test_binary_bodies_are_base64_encoded_and_responses_decoded() -> None:
    pdf = b"%PDF-1.7\x00\xff"
    event = http_api_event("PUT", "/v1/local-uploads/x", headers={"content-type": "application/pdf"}, body=pdf)
    assert event["isBase64Encoded"] is True and base64.b64decode(event["body"]) == pdf
    status, headers, body = decode_response(
        {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": "{}", "isBase64Encoded": False}
    )
    assert (status, headers["Content-Type"], body) == (201, "application/json", b"{}")

