-- A conversation turn's own vector (docs/retrieval.md, "A turn's own vector").
--
-- A turn written with ``source_conversation_id`` (or a caller's ``context``) is embedded with the
-- turn before it as its context: "Yes, last Tuesday!" alone means nothing. But a self-contained
-- turn embedded that way is mostly its neighbour's text, and a question about what it says misses
-- it (BEAM's technical messages: vector-only recall@10 0.26 with the context against 0.50 without).
-- Such a turn now also keeps the vector of its own text (``own_embedding``, NULL when the entry was
-- embedded without context: its ``embedding`` is then its own), and search reads a turn's better
-- cosine of the two. In the row like ``embedding`` (migration 0010), and indexed like it: the live
-- facts' partial HNSW index, so the vector signal scans both. Rows written before keep NULL.
ALTER TABLE memory_entries ADD COLUMN own_embedding vector({{EMBEDDING_DIM}});
ALTER TABLE memory_entries ALTER COLUMN own_embedding SET STORAGE MAIN;
CREATE INDEX memory_entries_own_embedding_idx ON memory_entries
    USING hnsw (own_embedding vector_cosine_ops) WHERE invalidated_at IS NULL;
