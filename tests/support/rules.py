"""Fixtures of the test modules that manage ingestion rules: an admin and a read/write client of the
module's ``PROJECT``, and every rule deleted after each test. A module imports them
(``from tests.support.rules import admin_fixture, clean_rules_fixture, reader_fixture``; pytest knows
them as ``admin``, ``reader`` and the autouse ``clean_rules``) and defines ``PROJECT``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import KeyFactory
from tests.support.api_client import ApiClient


@pytest.fixture(scope="module", name="admin")
def admin_fixture(make_key: KeyFactory, request: pytest.FixtureRequest) -> ApiClient:
    return ApiClient(make_key(request.module.PROJECT, "admin"))


@pytest.fixture(scope="module", name="reader")
def reader_fixture(make_key: KeyFactory, request: pytest.FixtureRequest) -> ApiClient:
    return ApiClient(make_key(request.module.PROJECT, "read,write"))


@pytest.fixture(autouse=True, name="clean_rules")
def clean_rules_fixture(admin: ApiClient) -> Iterator[None]:
    yield
    for rule in admin.get("/v1/ingestion-rules").json["data"]:
        admin.delete(f"/v1/ingestion-rules/{rule['id']}")
