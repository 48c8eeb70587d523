"""Typed Python client for the memory-engine HTTP API: :class:`MemoryEngineClient` (sync) and
:class:`AsyncMemoryEngineClient` (async), pydantic models in ``models``, typed errors in ``errors``."""

from memory_engine_client import models
from memory_engine_client.async_client import AsyncMemoryEngineClient
from memory_engine_client.client import MemoryEngineClient
from memory_engine_client.errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    MemoryEngineError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UnprocessableEntityError,
)

__version__ = "0.1.0"

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AsyncMemoryEngineClient",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "MemoryEngineClient",
    "MemoryEngineError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServerError",
    "UnprocessableEntityError",
    "models",
]
