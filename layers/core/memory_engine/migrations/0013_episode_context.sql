-- A recorded turn reads the turns around it (docs/retrieval.md, "Episodes"): an episode's `context`
-- is the transcript of the turn before it and of the turn after it in its conversation (1,000
-- characters of each), kept up to date whenever a turn of the conversation is recorded or deleted
-- (adapters/postgres/episode_context.py), so a deleted turn's words never stay in its neighbours.
-- It is BM25F's second field, as a fact's context is (0004, 0008): weight B of `search_tsv`, its
-- length `context_tokens`. A turn's vectors stay those of its own transcript.
ALTER TABLE episodes ADD COLUMN context text;

ALTER TABLE episodes DROP COLUMN search_tsv;
ALTER TABLE episodes ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    to_tsvector('english', transcript) || setweight(to_tsvector('english', coalesce(context, '')), 'B')
) STORED;
CREATE INDEX episodes_tsv_idx ON episodes USING gin (search_tsv) WITH (fastupdate = off);

ALTER TABLE episodes ADD COLUMN context_tokens integer GENERATED ALWAYS AS (
    tsvector_tokens(to_tsvector('english', coalesce(context, '')))
) STORED;

-- The turns recorded before: each reads its neighbours now.
UPDATE episodes e SET context = n.context
  FROM (SELECT id, nullif(concat_ws(E'\n', left(lag(transcript) OVER w, 1000), left(lead(transcript) OVER w, 1000)), '') AS context
          FROM episodes WHERE conversation_id IS NOT NULL AND memory_id IS NOT NULL
        WINDOW w AS (PARTITION BY memory_id, conversation_id ORDER BY coalesce(occurred_at, created_at), id)) n
 WHERE e.id = n.id AND n.context IS NOT NULL;
