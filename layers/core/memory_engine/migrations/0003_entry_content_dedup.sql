-- The write funnel: exact-duplicate lookup among a memory's live entries.
-- The HNSW shortlist is approximate; this index lets the funnel also find an identical live fact
-- deterministically, in the same query, whatever the vector index returns (and when the new fact
-- has no vector because embedding failed). md5 keeps the key small for long contents.
CREATE INDEX memory_entries_live_content_idx ON memory_entries (memory_id, md5(content))
    WHERE invalidated_at IS NULL;
