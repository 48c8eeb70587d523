from __future__ import annotations

import time

import pytest

from memory_engine import ids
from memory_engine.errors import InvalidInput, MemoryEngineError, NotFound, http_status
from memory_engine.settings import ChatProvider, EmbeddingProvider, Settings


def test_ids_are_prefixed_unique_and_time_sortable() -> None:
    first = ids.new_id(ids.MEMORY)
    time.sleep(0.002)
    later = [ids.new_id(ids.MEMORY) for _ in range(100)]
    assert all(ids.has_prefix(i, ids.MEMORY) for i in later)
    assert len(set(later)) == 100
    assert all(first < i for i in later)


def test_errors_render_the_spec_body_and_map_to_statuses() -> None:
    error = InvalidInput("bad threshold", details=[{"field": "duplicate_threshold"}])
    assert error.to_body() == {
        "error": {"code": "validation_error", "message": "bad threshold", "details": [{"field": "duplicate_threshold"}]}
    }
    assert http_status(error) == 422
    assert http_status(NotFound("x")) == 404
    assert http_status(MemoryEngineError("boom")) == 500
    assert http_status(ValueError("x")) == 500


def test_settings_read_the_contract_env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDDING_PROVIDER", "Bedrock")
    monkeypatch.setenv("CHAT_PROVIDER", "openai")
    monkeypatch.setenv("MEMORY_ENGINE_HOME", "/tmp/me-home")
    monkeypatch.setenv("HOME", "/root-should-not-be-used")
    settings = Settings()
    assert settings.embedding_provider is EmbeddingProvider.BEDROCK
    assert settings.resolved_embedding_model == "amazon.titan-embed-text-v2:0"
    assert settings.resolved_embedding_dimensions == 1024
    assert settings.chat_provider is ChatProvider.OPENAI
    assert str(settings.pgdata) == "/tmp/me-home/pgdata"


def test_settings_defaults_are_local(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EMBEDDING_PROVIDER", "EMBEDDING_DIMENSIONS", "CHAT_PROVIDER", "MEMORY_ENGINE_HOME", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert settings.embedding_provider is EmbeddingProvider.LOCAL
    assert settings.resolved_embedding_dimensions == 384
    assert settings.chat_provider is ChatProvider.NONE
    assert str(settings.home) == ".memory-engine"
