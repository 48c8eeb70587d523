-- Search v2 (docs/retrieval.md): conversation context and a BM25 keyword signal.
--
-- `context` is the text around a fact in its source (the preceding turn of the conversation it was
-- written from, or what the caller sent). It is indexed for keyword search with weight B (BM25
-- counts it at half weight) and embedded with the fact, but it is not the fact.
ALTER TABLE memory_entries ADD COLUMN context text;

-- The keyword column now carries the context (weight B) after the fact itself (weight D, the default).
ALTER TABLE memory_entries DROP COLUMN search_tsv;
ALTER TABLE memory_entries ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    to_tsvector('english',
        coalesce(subject, '') || ' ' || coalesce(predicate, '') || ' ' ||
        coalesce(object, '') || ' ' || content)
    || setweight(to_tsvector('english', coalesce(context, '')), 'B')
) STORED;
CREATE INDEX memory_entries_tsv_idx ON memory_entries USING gin (search_tsv);

-- Neighbouring entries of one conversation (the previous one for context at write time; the
-- neighbours of the best candidates at search time).
CREATE INDEX memory_entries_conversation_idx ON memory_entries (memory_id, source_conversation_id, created_at, id)
    WHERE source_conversation_id IS NOT NULL AND invalidated_at IS NULL;
