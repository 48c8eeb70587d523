"""The MCP tools' backend inside the API function (``POST /v1/mcp``): the same services, scopes and
validation as the REST routes, for the principal the request's bearer key authenticated."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memory_engine.bootstrap import Container
from memory_engine.domain.auth import Principal, Scope
from memory_engine.domain.cursor import page
from memory_engine.domain.search_models import SearchRequest
from memory_engine.domain.serialization import to_jsonable
from memory_engine.errors import InvalidInput
from memory_engine.mcp_server.backend import EngineBackend, Json
from memory_engine.services.keys import authorize
from memory_engine.services.memories import delete_entry

M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], body: Json) -> M:
    """``body`` as ``model``; a validation failure is the API's 422 with one detail per field."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        details = [{"field": ".".join(str(p) for p in e["loc"]) or "body", "message": e["msg"], "type": e["type"]}
                   for e in error.errors()]
        raise InvalidInput("request validation failed", details=details) from error


class InProcessBackend(EngineBackend):
    def __init__(self, container: Container, principal: Principal) -> None:
        self.container = container
        self.principal = principal

    def _project(self, scope: Scope) -> str:
        return authorize(self.principal, scope).project_id

    def search(self, body: Json) -> Json:
        from memory_engine.services.search_knowledge import search_knowledge

        project_id = self._project(Scope.READ)
        request = parse(SearchRequest, body)
        c = self.container
        chat = c.chat_model if "synthesis" in request.include else None
        response = search_knowledge(c.knowledge_index, c.embedder, project_id=project_id, request=request, chat=chat)
        return response.to_body()

    def write_entry(self, body: Json) -> Json:
        from memory_engine.domain.requests import EntryCreateRequest
        from memory_engine.services.write_entry import write_entry

        project_id = self._project(Scope.WRITE)
        request = parse(EntryCreateRequest, body)
        c = self.container
        result = write_entry(c.entries, c.embedder, c.chat_model, project_id=project_id, entry=request.new_entry(),
                             duplicate_threshold=request.duplicate_threshold, agent=request.agent_context())
        return result.reply().to_body()

    def list_memories(self, *, tags: list[str] | None, limit: int, cursor: str | None) -> Json:
        from memory_engine.services.memories import list_memories

        project_id = self._project(Scope.READ)
        items, next_cursor = list_memories(self.container.memories, project_id, tags=tags, limit=limit, cursor=cursor)
        return _json(page(items, next_cursor))

    def create_memory(self, body: Json) -> Json:
        from memory_engine.domain.requests import MemoryFields
        from memory_engine.services.memories import create_memory

        project_id = self._project(Scope.WRITE)
        return _json(create_memory(self.container.memories, project_id, parse(MemoryFields, body)))

    def list_entries(self, *, memory_id: str, include_invalidated: bool, limit: int, cursor: str | None) -> Json:
        from memory_engine.services.memories import list_entries

        project_id = self._project(Scope.READ)
        items, next_cursor = list_entries(self.container.entries, project_id, memory_id=memory_id,
                                          include_invalidated=include_invalidated, limit=limit, cursor=cursor)
        return _json(page(items, next_cursor))

    def delete_entry(self, entry_id: str) -> None:
        project_id = self._project(Scope.WRITE)
        delete_entry(self.container.entries, self.container.embedder, project_id, entry_id)

    def create_document(self, body: Json) -> Json:
        from memory_engine.domain.requests import CreateTextDocument
        from memory_engine.services.ingestion.documents import create_text_document, wait_until_settled

        project_id = self._project(Scope.WRITE)
        request = parse(CreateTextDocument, body)
        c = self.container
        doc, _ = create_text_document(c.ingestion_ports, c.pipeline_starter, project_id, request)
        if request.wait:
            doc = wait_until_settled(lambda: c.documents.get(project_id, doc.id))
        return _json(doc)

    def document_status(self, document_id: str) -> Json:
        project_id = self._project(Scope.READ)
        return _json(self.container.documents.get(project_id, document_id).status_view())


def _json(value: Any) -> Json:
    out = to_jsonable(value)
    assert isinstance(out, dict)
    return out
