-- Full-text indexes without GIN's pending list ("fast update").
--
-- With fastupdate on (PostgreSQL's default), new rows' lexemes go to an unsorted pending list that
-- every keyword search scans in full until a vacuum merges it, so searches slowed while documents
-- were written (bench/ingest_corpus.py: search p50 30 ms while a corpus drained vs 13 ms after).
-- Without it each insert updates the index directly: writes pay a little, searches stay flat.
ALTER INDEX memory_entries_tsv_idx SET (fastupdate = off);
ALTER INDEX document_chunks_tsv_idx SET (fastupdate = off);
ALTER INDEX episodes_tsv_idx SET (fastupdate = off);
-- what is already pending goes into the index now
SELECT gin_clean_pending_list('memory_entries_tsv_idx'::regclass);
SELECT gin_clean_pending_list('document_chunks_tsv_idx'::regclass);
SELECT gin_clean_pending_list('episodes_tsv_idx'::regclass);
