-- Episodes (conversation turns) in the fused search (issue 35, section 3; docs/retrieval.md, "Shape").
--
-- BM25 over the whole transcript: `search_tokens` is the number of indexed tokens of the transcript,
-- the |d| of BM25 as for document chunks (0008); an episode has no context field.
ALTER TABLE episodes ADD COLUMN search_tokens integer GENERATED ALWAYS AS (
    tsvector_tokens(to_tsvector('english', transcript))
) STORED;

-- A turn's neighbours in its conversation, in the order the turns endpoint lists them (the
-- neighbour feature of fusion reads the turns right before and after a candidate).
CREATE INDEX episodes_turn_order_idx ON episodes (memory_id, conversation_id, (coalesce(occurred_at, created_at)), id);

-- Vectors over windows that cover the whole turn: a turn holds up to 1 MB, the model reads some
-- 1,000 characters. One row per window of the transcript (`start_char`..`end_char`, 0-based,
-- end exclusive), written with the episode; the episode's vector signal is its best window.
-- The scope columns (project, memory, when it was said) are copied so the nearest-window scan
-- filters on this table alone.
CREATE TABLE episode_windows (
    episode_id    text NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    window_index  integer NOT NULL,
    project_id    text NOT NULL,
    memory_id     text,
    occurred_at   timestamptz,
    start_char    integer NOT NULL,
    end_char      integer NOT NULL,
    embedding     vector({{EMBEDDING_DIM}}) NOT NULL,
    PRIMARY KEY (episode_id, window_index)
);
CREATE INDEX episode_windows_memory_idx ON episode_windows (project_id, memory_id);
CREATE INDEX episode_windows_embedding_idx ON episode_windows USING hnsw (embedding vector_cosine_ops);

-- Episodes stored before this migration get one window each from their own vector (what the
-- model read of the transcript's start); a turn recorded from now on is covered whole.
INSERT INTO episode_windows (episode_id, window_index, project_id, memory_id, occurred_at, start_char, end_char, embedding)
SELECT id, 0, project_id, memory_id, occurred_at, 0, least(length(transcript), 1000), embedding
  FROM episodes WHERE embedding IS NOT NULL;
