"""Import a memory exported as JSONL (``services.export_import``) into a project: all or nothing.

Every row gets a new id with the old one kept (``metadata.imported_from`` on the memory and its
entries); timestamps, history and provenance stay as they were. Vectors in the file are used only
when the file's model id and dimensions are this deployment's; otherwise (or when a row has none)
the row is embedded again with this deployment's model, so a project never mixes two models' vectors.

An import never looks finished when it is not:

- Up to :data:`IMPORT_TRANSACTION_ROWS` rows (entities, entries and episodes), every line is read
  and checked and every vector computed first, then the memory and all its rows are written in one
  transaction. A bad line (not JSON, nested deeper than the one depth rule, a NaN or infinite
  vector, a field out of range) or a failure while writing leaves nothing behind.
- A larger import is written a chunk at a time (nothing holds the whole file): its memory carries
  ``metadata.import_status: "partial"`` until the last line is stored. An error names the memory;
  an interrupted import (a killed process) leaves that mark. Running the same import again (an
  export of the same memory) first deletes the partial memory it left, so a retry replaces it
  instead of making a second copy. A finished import is never touched: importing again makes
  another copy, as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import chain, islice
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from memory_engine import ids
from memory_engine.domain.entities import (
    NewEntityLink,
    anchor_name,
    display_entity_name,
    embedding_text,
    keeps_own_vector,
    normalize_entity_name,
)
from memory_engine.domain.entries import EntryEntity, Memory, MemoryEntry, turn_speaker
from memory_engine.domain.turns import window_spans
from memory_engine.domain.validation import JsonTooDeep, loads_json
from memory_engine.errors import InvalidInput, MemoryEngineError, invalid_input
from memory_engine.ports.embedder import Embedder, Vector
from memory_engine.ports.episodes import EpisodeRepository, EpisodeWindow
from memory_engine.ports.lifecycle import ImportedEntity, ImportedEntry, ImportedEpisode, ImportedMemory, ImportRepository
from memory_engine.services.export_import import EntityRecord, EntryRecord, EpisodeRecord, HeaderRecord, MemoryRecord
from memory_engine.services.turns import embed_windows, read_turns_before
from memory_engine.services.write_entry import embed_best_effort

#: The most rows (entities, entries, episodes) an import writes in one transaction; a larger one is
#: written a chunk at a time, marked ``partial`` until it is complete (docs/limits.md).
IMPORT_TRANSACTION_ROWS = 5_000
#: Rows per chunk (one embedding call and one insert each).
IMPORT_CHUNK = 200
#: Metadata key holding the exported ids on imported rows.
IMPORTED_FROM = "imported_from"
#: Metadata key marking a memory whose import is not complete, and its value.
IMPORT_STATUS, PARTIAL = "import_status", "partial"

_Record = EntityRecord | EntryRecord | EpisodeRecord
_KINDS: dict[str, type[BaseModel]] = {"entity": EntityRecord, "entry": EntryRecord, "episode": EpisodeRecord}


@dataclass
class _Counts:
    entries: int = 0
    entities: int = 0
    episodes: int = 0
    embedded: int = 0
    vectors_reused: bool = False
    #: exported id -> new id, for the memory's entries (ids only: ~60 bytes per entry)
    entry_ids: dict[str, str] = field(default_factory=dict)
    #: the new episodes' ids, which read the turns before them once the memory is complete
    episode_ids: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class ImportSummary(_Counts):
    memory: Memory

    def counts(self) -> dict[str, Any]:
        return {"memory": self.memory, "entries": self.entries, "entities": self.entities, "episodes": self.episodes,
                "embedded": self.embedded, "vectors_reused": self.vectors_reused}


def import_memory(lines: Iterable[str], *, project_id: str, importer: ImportRepository, embedder: Embedder,
                  episodes: EpisodeRepository, transaction_rows: int = IMPORT_TRANSACTION_ROWS) -> ImportSummary:
    """Recreate an exported memory in ``project_id`` (see the module docstring for what stays
    behind when it fails). Raises InvalidInput (422) naming the first bad line (the header and the
    memory must come first). Once the memory is complete, its recorded turns are embedded after the
    turns before them as recording does (services.turns.read_turns_before: an export carries no
    such vector; best-effort)."""
    numbered = ((n, text) for n, text in enumerate(lines, start=1) if text.strip())
    header: HeaderRecord = _parse(*_next(numbered, "header"), HeaderRecord)
    record: MemoryRecord = _parse(*_next(numbered, "memory"), MemoryRecord)
    memory = ImportedMemory(
        id=ids.new_id(ids.MEMORY), name=record.name, description=record.description, tags=list(record.tags),
        metadata={**(record.metadata or {}), IMPORTED_FROM: {"id": record.id}}, default_ttl=record.default_ttl)
    reuse = bool(header.vectors and header.embedding_model == embedder.model_id and header.dimensions == embedder.dimensions)
    writer = _Writer(_Counts(vectors_reused=reuse), project_id, memory.id, importer, embedder)
    records = _records(numbered)
    first = list(islice(records, transaction_rows + 1))
    if len(first) <= transaction_rows:
        batches = [writer.prepare(chunk) for chunk in _chunks(iter(first))]
        with importer.transaction():
            importer.discard_partial(project_id, record.id)
            created = importer.create_memory(project_id, memory)
            for batch in batches:
                writer.store(batch)
            writer.link()
        read_turns_before(episodes, embedder, project_id, writer.counts.episode_ids)
        return writer.summary(created)
    importer.discard_partial(project_id, record.id)
    staged = importer.create_memory(project_id, replace(memory, metadata={**memory.metadata, IMPORT_STATUS: PARTIAL}))
    try:
        for chunk in _chunks(chain(first, records)):
            writer.store(writer.prepare(chunk))
        writer.link()
    except MemoryEngineError as error:
        raise _left_partial(error, staged.id) from error
    finished = importer.finish(project_id, staged.id)
    read_turns_before(episodes, embedder, project_id, writer.counts.episode_ids)
    return writer.summary(finished)


def _left_partial(error: MemoryEngineError, memory_id: str) -> MemoryEngineError:
    """``error``, saying which memory holds what was stored before it."""
    return type(error)(
        f"{error.message} (memory {memory_id} holds the lines before it and stays marked "
        f'metadata.import_status "{PARTIAL}"; run the same import again to replace it)',
        details={"memory_id": memory_id, IMPORT_STATUS: PARTIAL, "errors": error.details}, code=error.code)


def _load(line_no: int, text: str) -> Any:
    try:
        return loads_json(text)
    except JsonTooDeep as error:
        raise InvalidInput(f"line {line_no} {error}", details=[{"line": line_no, "limit": error.limit}]) from error
    except ValueError as error:
        raise InvalidInput(f"line {line_no} is not JSON: {getattr(error, 'msg', error)}",
                           details=[{"line": line_no}]) from error


def _parse(line_no: int, text: str, model: type[BaseModel], data: Any = None) -> Any:
    try:
        return model.model_validate(_load(line_no, text) if data is None else data)
    except ValidationError as error:
        raise invalid_input(error, f"line {line_no} is not a valid {model.__name__.removesuffix('Record').lower()} "
                                   "record") from error


def _next(numbered: Iterator[tuple[int, str]], what: str) -> tuple[int, str]:
    found = next(numbered, None)
    if found is None:
        raise InvalidInput(f"the import has no {what} line (expected a memory-engine export)",
                           details=[{"line": None, "expected": what}])
    return found


def _records(numbered: Iterator[tuple[int, str]]) -> Iterator[_Record]:
    for line_no, text in numbered:
        data = _load(line_no, text)
        kind = data.get("type") if isinstance(data, dict) else None
        if kind not in _KINDS:
            raise InvalidInput(f"line {line_no}: `type` must be one of entity, entry, episode",
                               details=[{"line": line_no, "field": "type"}])
        yield _parse(line_no, text, _KINDS[str(kind)], data)


def _chunks(records: Iterator[_Record]) -> Iterator[list[_Record]]:
    while chunk := list(islice(records, IMPORT_CHUNK)):
        yield chunk




@dataclass
class _Batch:
    entities: list[ImportedEntity]
    entries: list[ImportedEntry]
    episodes: list[ImportedEpisode]


class _Writer:
    """Turns records into rows with vectors (:meth:`prepare`, no writes) and writes them
    (:meth:`store`: entities before the entries linking them)."""

    def __init__(self, counts: _Counts, project_id: str, memory_id: str, importer: ImportRepository,
                 embedder: Embedder) -> None:
        self.counts, self._project, self._memory, self._importer, self._embedder = (
            counts, project_id, memory_id, importer, embedder)
        self._known_entities: set[str] = set()
        self._superseded: list[tuple[str, str]] = []  # (new id, exported id of the superseding entry)

    def prepare(self, records: list[_Record]) -> _Batch:
        entities: dict[str, EntityRecord] = {}
        entries = [r for r in records if isinstance(r, EntryRecord)]
        episodes = [r for r in records if isinstance(r, EpisodeRecord)]
        for r in records:
            if isinstance(r, EntityRecord):
                entities[normalize_entity_name(r.name)] = r
        # entities named by entries without an entity line are created too (and embedded)
        for entry in entries:
            for ref in entry.entities:
                key = normalize_entity_name(ref.name)
                if key not in entities and key not in self._known_entities:
                    entities[key] = EntityRecord.model_validate(
                        {"type": "entity", "name": key, "display_name": display_entity_name(ref.name),
                         "entity_type": ref.type})
        self._known_entities.update(entities)
        named = list(entities.items())
        entity_vectors = self._vectors([e.display_name for _, e in named], [e.embedding for _, e in named])
        return _Batch(
            [ImportedEntity(key, e.display_name, e.entity_type, v) for (key, e), v in zip(named, entity_vectors, strict=True)],
            self._entry_rows(entries),
            [ImportedEpisode(e.conversation_id, e.turn_id, e.event_id, e.occurred_at, e.transcript, e.messages, w,
                             e.created_at) for e, w in zip(episodes, self._windows(episodes), strict=True)])

    def store(self, batch: _Batch) -> None:
        self._importer.upsert_entities(self._project, batch.entities)
        self.counts.entities += len(batch.entities)
        self._importer.insert_entries(self._project, self._memory, batch.entries)
        self.counts.entries += len(batch.entries)
        stored = self._importer.insert_episodes(self._project, self._memory, batch.episodes)
        self.counts.episodes += len(stored)
        self.counts.episode_ids.extend(stored)

    def summary(self, memory: Memory) -> ImportSummary:
        c = self.counts
        return ImportSummary(memory=memory, **dataclasses.asdict(c))

    def link(self) -> None:
        pairs = [(new, self.counts.entry_ids[old]) for new, old in self._superseded if old in self.counts.entry_ids]
        self._importer.link_superseded(self._project, pairs)

    def _vectors(self, texts: list[str], given: list[list[float] | None]) -> list[Vector | None]:
        """The file's vector where usable, else one embedding call for the rest (best-effort)."""
        out: list[Vector | None] = [np.asarray(v, dtype=np.float32) if self.counts.vectors_reused and v is not None
                                    and len(v) == self._embedder.dimensions else None for v in given]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            for i, vector in zip(missing, embed_best_effort(self._embedder, [texts[i] for i in missing]), strict=True):
                out[i] = vector
            self.counts.embedded += len(missing)
        return out

    def _windows(self, records: list[EpisodeRecord]) -> list[list[EpisodeWindow]]:
        """Each episode's vector windows over its whole transcript, as a recorded turn gets them (an export
        holds one vector per episode): the file's vector serves a transcript that fits one window, the
        others are embedded in one call (best effort: none when the model fails)."""
        out: list[list[EpisodeWindow] | None] = []
        for r in records:
            spans = window_spans(r.transcript)
            given = r.embedding if self.counts.vectors_reused and len(spans) == 1 else None
            out.append([EpisodeWindow(*spans[0], np.asarray(given, dtype=np.float32))]
                       if given is not None and len(given) == self._embedder.dimensions else None)
        missing = [i for i, windows in enumerate(out) if windows is None]
        if missing:
            embedded = embed_windows(self._embedder, [records[i].transcript for i in missing])
            for i, windows in zip(missing, embedded, strict=True):
                out[i] = windows
            self.counts.embedded += len(missing)
        return [windows or [] for windows in out]

    def _entry_rows(self, records: list[EntryRecord]) -> list[ImportedEntry]:
        texts, owns = [], []
        for r in records:
            links = [NewEntityLink(normalize_entity_name(x.name), x.name, x.type, x.role) for x in r.entities]
            anchor = anchor_name(links)
            speaker = turn_speaker(r.subject, r.source_conversation_id, r.source_type)
            texts.append(embedding_text(r.content, anchor, context=r.context, speaker=speaker))
            # a turn keeps its own vector too where a write gives it one; a file whose vectors are reused
            # says which entries had one (an entry is restored with the vectors it was exported with)
            if self.counts.vectors_reused and r.embedding is not None:
                owns.append(r.content.strip() if r.own_embedding is not None else None)
            else:
                kept = keeps_own_vector(r.content, anchor, context=r.context, speaker=speaker)
                owns.append(r.content.strip() if kept else None)
        wanted = [i for i, own in enumerate(owns) if own is not None]
        vectors = self._vectors(texts + [str(owns[i]) for i in wanted],
                                [r.embedding for r in records] + [records[i].own_embedding for i in wanted])
        own_vectors = dict(zip(wanted, vectors[len(records):], strict=True))
        rows = []
        for i, (r, vector) in enumerate(zip(records, vectors[:len(records)], strict=True)):
            new_id = ids.new_id(ids.ENTRY)
            self.counts.entry_ids[r.id] = new_id
            if r.superseded_by_entry_id:
                self._superseded.append((new_id, r.superseded_by_entry_id))
            entry = MemoryEntry(
                **r.model_dump(exclude={"type", "id", "metadata", "entities", "embedding", "own_embedding",
                                    "superseded_by_entry_id"}),
                id=new_id, project_id=self._project, memory_id=self._memory,
                metadata={**(r.metadata or {}), IMPORTED_FROM: {"id": r.id}}, superseded_by_entry_id=None,
                entities=[EntryEntity(name=x.name, type=x.type, role=x.role) for x in r.entities])
            rows.append(ImportedEntry(entry, vector, [(normalize_entity_name(x.name), x.role) for x in r.entities],
                                      own_vectors.get(i)))
        return rows
