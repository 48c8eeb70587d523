"""What the framework adapters share, without a framework: turns cut into record_turns calls that
the engine and Lambda's payload limit accept, in order."""

from __future__ import annotations

from memory_engine_client.integrations._common import MAX_BATCH_BYTES, MAX_TURNS, turn_batches


def test_batches_keep_the_order_and_stay_under_the_count_and_size_limits() -> None:
    small = [{"role": "user", "content": f"turn {i}"} for i in range(250)]
    assert [len(b) for b in turn_batches(small)] == [MAX_TURNS, MAX_TURNS, 50]
    assert [t for b in turn_batches(small) for t in b] == small

    big = [{"role": "user", "content": "x" * 900_000} for _ in range(12)]  # 10.8 MB in all
    batches = list(turn_batches(big))
    assert [len(b) for b in batches] == [5, 5, 2]
    assert all(sum(len(t["content"]) for t in b) < MAX_BATCH_BYTES for b in batches)
    assert list(turn_batches([])) == []
