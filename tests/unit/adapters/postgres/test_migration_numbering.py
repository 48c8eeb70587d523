"""Migrations are tracked by version number, so the numbering of shipped ones never changes; a new
one is the highest version plus one (the never-released 0002 is the one allowed gap)."""

from __future__ import annotations

import pytest

from memory_engine.adapters.postgres.migrations import check_numbering, load_migrations
from memory_engine.migrations import SKIPPED_VERSIONS


def test_the_shipped_migrations_are_numbered_without_a_gap_but_the_skipped_one() -> None:
    versions = [m.version for m in load_migrations()]
    assert versions[0] == 1 and SKIPPED_VERSIONS == {2}
    assert set(versions).isdisjoint(SKIPPED_VERSIONS)


@pytest.mark.parametrize("versions", [[1, 3, 5], [1, 2, 3], [1, 3, 3], [3, 4]])
def test_a_gap_a_reused_skipped_number_or_a_duplicate_is_refused(versions: list[int]) -> None:
    with pytest.raises(RuntimeError):
        check_numbering(versions)


def test_the_next_migration_is_the_highest_plus_one() -> None:
    versions = [m.version for m in load_migrations()]
    check_numbering([*versions, versions[-1] + 1])
