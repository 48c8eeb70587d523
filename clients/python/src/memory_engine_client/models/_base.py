"""The two bases (requests forbid unknown fields, responses allow them) and the enumerations."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResponseModel(BaseModel):
    model_config = ConfigDict(extra="allow")


SourceType = Literal["manual", "agent", "extraction", "orchestration"]
ChunkStrategy = Literal["page", "whole", "size", "recursive"]
DocumentStatus = Literal["pending", "processing", "ready", "failed"]
WriteAction = Literal["created", "skipped", "updated", "superseded"]
BatchWriteAction = Literal["created", "updated", "skipped", "superseded", "rejected"]
SearchPreset = Literal["hybrid", "vector_only", "keyword_only", "entity_only", "rrf_v1"]
ExtractionRunStatus = Literal["running", "completed", "failed"]
NativeExtraction = Literal["first", "skip"]
FileDelivery = Literal["base64", "download_url"]
ChunkSource = Literal["request", "rule", "default"]
TurnRole = Literal["user", "assistant", "system", "tool"]
