-- Vectors kept in their row, not in the TOAST table (docs/retrieval.md, "Latency": vector_only on
-- LoCoMo-size memories).
--
-- pgvector's type is stored EXTERNAL: a row wider than about 2 kB (TOAST_TUPLE_THRESHOLD) has its
-- widest fields moved out of line until it fits, and at 384 dimensions the vector (1,540 bytes) is the
-- widest. A fact written with its conversation context is about 2.7 kB, so its vector lived in the
-- TOAST table and every vector read of it (an exact scan of a memory's facts, the cosine of a result
-- row) fetched it from there: three more buffer reads and a copy per row, 1,348 buffers for an
-- exact scan of 419 facts where 123 hold them in the row, and 0.8-2.0 ms against 0.2-0.3 ms.
--
-- toast_tuple_target: rows up to a page's worth stay whole (nothing compressed or moved out);
-- STORAGE MAIN: in a row wider still (a long chunk or turn), the text fields are compressed and
-- moved out first and the vector only as a last resort. This holds for rows written from now on: a
-- row written before keeps its vector out of line, even when updated, until the table is rewritten
-- (`VACUUM FULL memory_entries; VACUUM FULL document_chunks;`, which locks the table while it runs,
-- so it is left to the operator).
ALTER TABLE memory_entries SET (toast_tuple_target = 8160), ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE document_chunks SET (toast_tuple_target = 8160), ALTER COLUMN embedding SET STORAGE MAIN;
