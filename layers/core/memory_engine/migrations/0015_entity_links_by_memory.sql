-- An entity link records its fact's memory (docs/retrieval.md, "Entity signal"). The entity signal
-- judges an anchor by its links (a hub, skipped, beyond 100 of them) and reads every link of the
-- anchors it keeps. Counted over the whole project, an entity on 150 facts of other users' memories
-- was a hub in a memory holding three of them (a project of one memory per user, as the agent
-- framework integrations write), and a memory's similar entities were chosen among the project's.
-- With the memory on the link, a search of memories by id counts and reads the links of those
-- memories alone, from one index.
--
-- Writers name the memory (adapters/postgres/entry_sql.py, imports.py); a writer that does not (a
-- release before this one, still running while a deploy rolls out, or a hand-written INSERT) gets it
-- from its fact by the first trigger. The engine never moves a fact to another memory; should anything
-- else, the second trigger moves its links along. A link goes with its fact (ON DELETE CASCADE).
--
-- The backfill rewrites the table once, holding its lock meanwhile (the old index is dropped first
-- and the new one built after, so neither is maintained row by row): 292,679 links in 4.1 s
-- on the development machine.
DROP INDEX entry_entities_entity_idx;
ALTER TABLE entry_entities ADD COLUMN memory_id text;
UPDATE entry_entities l SET memory_id = e.memory_id FROM memory_entries e WHERE e.id = l.entry_id;
ALTER TABLE entry_entities ALTER COLUMN memory_id SET NOT NULL;

CREATE FUNCTION entry_entities_memory() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.memory_id := (SELECT e.memory_id FROM memory_entries e WHERE e.id = NEW.entry_id);
    RETURN NEW;
END $$;
CREATE TRIGGER entry_entities_memory BEFORE INSERT ON entry_entities
    FOR EACH ROW WHEN (NEW.memory_id IS NULL) EXECUTE FUNCTION entry_entities_memory();

CREATE FUNCTION entry_entities_follow_memory() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    UPDATE entry_entities SET memory_id = NEW.memory_id WHERE entry_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_entries_memory_moved AFTER UPDATE OF memory_id ON memory_entries
    FOR EACH ROW WHEN (OLD.memory_id IS DISTINCT FROM NEW.memory_id) EXECUTE FUNCTION entry_entities_follow_memory();

-- by entity (every read of the signal starts from its anchors), then memory: serves the project-wide
-- reads the old index served and the per-memory ones
CREATE INDEX entry_entities_entity_memory_idx ON entry_entities (entity_id, memory_id);
ANALYZE entry_entities;
