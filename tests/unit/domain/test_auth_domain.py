from __future__ import annotations

import pytest

from memory_engine.domain.auth import KEY_PREFIX, Principal, Scope, generate_key, hash_key, hashes_match, parse_scopes


def test_generated_keys_are_unique_prefixed_and_hash_stably() -> None:
    # Given two generated keys
    a, b = generate_key(), generate_key()
    # Then they differ, carry the prefix, and only the right key matches a stored hash
    assert a != b and a.startswith(KEY_PREFIX) and len(a) > 40
    assert hashes_match(hash_key(a), a)
    assert not hashes_match(hash_key(a), b)
    assert a not in hash_key(a)


def test_parse_scopes_accepts_lists_and_rejects_unknown() -> None:
    assert parse_scopes("read, write") == frozenset({Scope.READ, Scope.WRITE})
    assert parse_scopes(["admin"]) == frozenset({Scope.ADMIN})
    with pytest.raises(ValueError, match="unknown scope 'delete'"):
        parse_scopes("read,delete")
    with pytest.raises(ValueError, match="at least one"):
        parse_scopes(" , ")


def test_admin_implies_every_scope_but_read_does_not_imply_write() -> None:
    admin = Principal("proj_x", "key_x", frozenset({Scope.ADMIN}))
    reader = Principal("proj_x", "key_y", frozenset({Scope.READ}))
    assert admin.allows(Scope.WRITE) and admin.allows(Scope.READ)
    assert reader.allows(Scope.READ) and not reader.allows(Scope.WRITE)
