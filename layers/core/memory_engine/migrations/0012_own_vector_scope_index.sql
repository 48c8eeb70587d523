-- Where a scope's own vectors are (docs/retrieval.md, "A turn's own vector"): the facts' vector list
-- scans ``own_embedding`` too (migration 0011), filtered by the scope. Most rows have none (only
-- turns embedded with a context do), so the planner estimates that scan at a row or two and reads
-- the scope with a sequential scan: 78 ms at 100,000 facts and no turn, every search. With this
-- index the rows that have one are found directly (0.04 ms when there are none); ``project_id``
-- first, as every scope filter names it (memory ids or tags, with or without ``as_of``).
CREATE INDEX memory_entries_own_scope_idx ON memory_entries (project_id, memory_id) WHERE own_embedding IS NOT NULL;
