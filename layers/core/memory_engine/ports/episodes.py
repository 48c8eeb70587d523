"""Repository port for episodes: the stored transcript of every completed turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memory_engine.domain.cursor import Cursor
from memory_engine.ports.embedder import Vector


@dataclass(frozen=True)
class NewEpisode:
    project_id: str
    memory_id: str
    conversation_id: str
    turn_id: str
    event_id: str
    occurred_at: datetime
    transcript: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    #: The new row's id; a fresh one when absent (ids of one batch are made in order, so turns
    #: said at the same time keep the order they were sent in).
    id: str | None = None


@dataclass(frozen=True)
class EpisodeWindow:
    """One vector window of an episode's transcript: ``transcript[start:end]`` embedded
    (:func:`memory_engine.domain.turns.window_spans`)."""

    start: int
    end: int
    embedding: Vector


@dataclass(frozen=True)
class TurnBefore:
    """A turn to embed after the turn before it (:func:`memory_engine.domain.turns.read_after`):
    its id, the id of that turn, and the text to embed."""

    episode_id: str
    before_id: str
    text: str


@dataclass(frozen=True)
class TurnsDeleted:
    """``count`` episodes deleted; ``around``: the turns that were right before and after them,
    which read their new neighbours (:meth:`EpisodeRepository.turns_to_read`)."""

    count: int
    around: tuple[str, ...] = ()


@dataclass(frozen=True)
class Episode:
    id: str
    project_id: str
    memory_id: str | None
    conversation_id: str | None
    turn_id: str | None
    event_id: str | None
    occurred_at: datetime | None
    transcript: str
    messages: list[dict[str, Any]]
    created_at: datetime
    has_embedding: bool = False


@dataclass(frozen=True)
class EpisodeHit:
    episode: Episode
    similarity: float


class EpisodeRepository(Protocol):
    """Episodes are unique per (project, event id): storing the same event twice stores one row.

    Every method is scoped by ``project_id``. Methods raise
    :class:`memory_engine.errors.DatabaseError` when the database fails.
    """

    def store(self, episode: NewEpisode, windows: Sequence[EpisodeWindow]) -> tuple[Episode, bool]:
        """Insert the episode and its vector ``windows`` (none when it could not be embedded; the
        episode's own ``embedding`` is the first window's) unless this event's episode exists;
        returns (episode, created)."""
        ...

    def set_windows(self, project_id: str, episode_id: str, windows: Sequence[EpisodeWindow]) -> None:
        """Replace the episode's vector windows (and its own vector: the first window's)."""
        ...

    def get(self, project_id: str, episode_id: str) -> Episode | None: ...

    def get_by_event(self, project_id: str, event_id: str) -> Episode | None: ...

    def list_for_conversation(self, project_id: str, conversation_id: str) -> list[Episode]: ...

    def store_turns(
        self, episodes: Sequence[NewEpisode], windows: Sequence[Sequence[EpisodeWindow]]
    ) -> list[tuple[Episode, bool]]:
        """Store several episodes with their vector windows (as :meth:`store`) in one transaction,
        in order, each unless its event's episode exists; (episode, created) per item. Raises
        NotFound when the memory is not in the project."""
        ...

    def list_turns(
        self, project_id: str, memory_id: str, conversation_id: str, *, limit: int, cursor: Cursor | None,
        newest_first: bool = False,
    ) -> tuple[list[Episode], Cursor | None]:
        """A conversation's episodes in ``(occurred_at, id)`` order (reversed with ``newest_first``),
        strictly after ``cursor`` in that order; and the cursor of the next page (None on the last)."""
        ...

    def delete_turns(self, project_id: str, memory_id: str, *, conversation_id: str | None = None,
                     turn_id: str | None = None) -> TurnsDeleted:
        """Delete the memory's episodes matching every given filter (and the windows of other turns
        that read them)."""
        ...

    def turns_to_read(self, project_id: str, episode_ids: Sequence[str]) -> list[TurnBefore]:
        """Of ``episode_ids`` and the turns right after each in their conversations: those that fit
        in one window with the turn before them and have no window over that turn yet."""
        ...

    def store_read_windows(self, project_id: str, windows: Sequence[tuple[TurnBefore, Vector]]) -> int:
        """Each turn's window over the turn before it, where that turn is still the one before it and
        the turn has none over it yet (a window over a turn no longer before it goes); how many were
        stored."""
        ...

    def search_similar(
        self, project_id: str, embedding: Vector, *, memory_ids: Sequence[str] | None = None, limit: int = 10
    ) -> list[EpisodeHit]:
        """Episodes by cosine similarity to ``embedding`` (most similar first)."""
        ...
