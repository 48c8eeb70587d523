"""The expiry sweep: entries past their ``expires_at`` are invalidated with reason ``expired``.

Reads never wait for it: search, lists and the funnel's dedup filter on ``expires_at`` at read
time, so nothing expired is returned between sweeps. The sweep makes the expiry visible as
history (``invalidated_at``, ``invalidation_reason``), like a superseded entry. It runs on a
schedule: EventBridge Scheduler -> ``functions/expiry`` on AWS, a timer in the local engine.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from memory_engine.ports.lifecycle import ExpiryRepository

logger = logging.getLogger(__name__)

#: Rows invalidated per statement (each is one short transaction).
SWEEP_BATCH = 1_000
#: How often the sweep runs (the Scheduler's rate and the local timer).
SWEEP_INTERVAL_SECONDS = 60


def sweep_expired(repo: ExpiryRepository, *, now: datetime | None = None, batch: int = SWEEP_BATCH,
                  max_batches: int = 100) -> int:
    """Invalidate every live entry that expired by ``now`` (default: the current time), in
    batches of ``batch``; returns how many. Idempotent: a second sweep finds nothing."""
    at = now or datetime.now(UTC)
    total = 0
    for _ in range(max_batches):
        done = repo.invalidate_expired(now=at, limit=batch)
        total += done
        if done < batch:
            break
    if total:
        logger.info("expiry sweep: %d entr%s invalidated", total, "y" if total == 1 else "ies")
    return total
