"""Repair rows stored without a vector (embedding is best-effort at write time)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory_engine.ports.embedder import Embedder
from memory_engine.ports.entries import REPAIRABLE_TABLES, EmbeddingRepairRepository
from memory_engine.services.turns import window_vectors


@dataclass(frozen=True)
class RepairProgress:
    table: str
    done: int
    total: int


def reembed_missing(
    repair: EmbeddingRepairRepository,
    embedder: Embedder,
    *,
    tables: Sequence[str] = REPAIRABLE_TABLES,
    batch_size: int = 64,
    progress: Callable[[RepairProgress], None] | None = None,
) -> dict[str, int]:
    """Embed every row of ``tables`` whose vector is NULL (an episode: whose windows do not cover its
    whole transcript), ``batch_size`` rows per model call.

    Returns rows repaired per table. Raises EmbeddingError when the model fails (rows already
    repaired stay repaired; run it again to continue).
    """
    repaired: dict[str, int] = {}
    for table in tables:
        total = repair.count_missing(table)
        done, after = 0, None
        while True:
            batch = repair.missing(table, after_id=after, limit=batch_size)
            if not batch:
                break
            if table == "episodes":  # vectors over the whole transcript, as a recorded turn gets them
                windows = window_vectors(embedder, [text for _, text in batch])
                done += repair.store_windows([(row_id, own) for (row_id, _), own in zip(batch, windows, strict=True)])
            else:
                vectors = embedder.embed_documents([text for _, text in batch])
                done += repair.store(table, [(row_id, vec) for (row_id, _), vec in zip(batch, vectors, strict=True)])
            after = batch[-1][0]
            if progress is not None:
                progress(RepairProgress(table, done, total))
        repaired[table] = done
    return repaired
