-- Memory lifecycle: expiry of entries and a default time-to-live per memory.
--
-- `expires_at`: when the fact stops being returned. Reads filter on it at once (nothing expired is
-- ever returned between sweeps); the sweep then invalidates it with reason 'expired' (kept for
-- audit, like a superseded entry). `default_ttl` (seconds) gives entries written to the memory
-- without their own `expires_at` one of `now() + default_ttl`.
ALTER TABLE memory_entries ADD COLUMN expires_at timestamptz;
ALTER TABLE memories ADD COLUMN default_ttl integer CHECK (default_ttl IS NULL OR default_ttl > 0);

-- The sweep's scan: live entries that carry an expiry, soonest first.
CREATE INDEX memory_entries_expiry_idx ON memory_entries (expires_at)
    WHERE invalidated_at IS NULL AND expires_at IS NOT NULL;

-- Forgetting a conversation finds its entries (live and history) by provenance.
CREATE INDEX memory_entries_source_conversation_idx ON memory_entries (project_id, source_conversation_id)
    WHERE source_conversation_id IS NOT NULL;
CREATE INDEX extraction_runs_conversation_idx ON extraction_runs (project_id, conversation_id);
