"""list_documents with a fake repository: the request's filters are parsed once, in the service."""

from __future__ import annotations

import pytest

from memory_engine.domain.documents import DocumentStatus
from memory_engine.errors import InvalidInput
from memory_engine.services.list_documents import list_documents
from tests.unit.services.fakes import FakeDocuments


def test_filters_reach_the_repository_parsed() -> None:
    # Given tags as API Gateway joins them, a status and a limit
    documents = FakeDocuments()
    # When the documents are listed
    list_documents(documents, "proj_1", path_prefix="/a/", tags=" x*, y ,,x*", status="ready", limit=5)
    # Then the repository gets clean globs, the status enum and the limit
    assert documents.asked == [{"path_prefix": "/a/", "tags": ["x*", "y"], "status": DocumentStatus.READY,
                                "limit": 5, "cursor": None}]


@pytest.mark.parametrize(("field", "kwargs"), [
    ("status", {"status": "done"}),
    ("limit", {"limit": 0}),
    ("limit", {"limit": 101}),
    ("tags", {"tags": ",".join(f"t{i}" for i in range(51))}),
])
def test_a_bad_filter_is_a_422_naming_it(field: str, kwargs: dict[str, object]) -> None:
    documents = FakeDocuments()
    with pytest.raises(InvalidInput) as raised:
        list_documents(documents, "proj_1", **kwargs)  # type: ignore[arg-type]
    assert raised.value.details == [{"field": field}]
    assert documents.asked == []
