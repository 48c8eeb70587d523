"""Repair rows stored without a vector (embedding is best-effort at write time)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory_engine.ports.embedder import Embedder, Vector
from memory_engine.ports.entries import REPAIRABLE_TABLES, EmbeddingRepairRepository
from memory_engine.ports.episodes import TurnBefore
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
    whole transcript, or that has no window over the turn before it where the two fit one:
    services.turns.read_turns_before), ``batch_size`` rows per model call.

    Returns rows repaired per table. Raises EmbeddingError when the model fails (rows already
    repaired stay repaired; run it again to continue).
    """
    repaired: dict[str, int] = {}
    for table in tables:
        total = repair.count_missing(table) + (repair.count_unread() if table == "episodes" else 0)
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
        if table == "episodes":
            done = _read_turns_before(repair, embedder, batch_size, RepairProgress(table, done, total), progress)
        repaired[table] = done
    return repaired


def _read_turns_before(repair: EmbeddingRepairRepository, embedder: Embedder, batch_size: int, so_far: RepairProgress,
                       progress: Callable[[RepairProgress], None] | None) -> int:
    """Recorded turns without their window over the turn before them (services.turns.read_turns_before)
    get it; ``so_far.done`` plus how many did."""
    after, done = None, so_far.done
    while batch := repair.unread(after_id=after, limit=batch_size):
        vectors = embedder.embed_documents([turn.text for _, turn in batch])
        by_project: dict[str, list[tuple[TurnBefore, Vector]]] = {}
        for (project_id, turn), vector in zip(batch, vectors, strict=True):
            by_project.setdefault(project_id, []).append((turn, vector))
        done += sum(repair.store_read_windows(project_id, windows) for project_id, windows in by_project.items())
        after = batch[-1][1].episode_id
        if progress is not None:
            progress(RepairProgress(so_far.table, done, so_far.total))
    return done
