-- Embeddings stay in their row instead of the TOAST table.
--
-- A row goes to TOAST once it passes ~2 kB, and pgvector's type lets its value move out of line
-- first: a 384-dimension vector is 1.5 kB, so nearly every fact and chunk kept its embedding in
-- the TOAST table (100k facts: 113 MB of heap, 113 MB of TOAST). Every cosine computed in SQL (the
-- vector lists' scores, the entity list's order, the candidates' and result rows' similarity) then
-- read it back through the TOAST index. With the target at its maximum, a row is only toasted past
-- ~8 kB: facts and chunks keep every column in line (bench numbers: docs/retrieval.md).
-- Rows already written move when they are next written; a storage parameter changes no data now.
ALTER TABLE memory_entries SET (toast_tuple_target = 8160);
ALTER TABLE document_chunks SET (toast_tuple_target = 8160);
ALTER TABLE entities SET (toast_tuple_target = 8160);
ALTER TABLE episodes SET (toast_tuple_target = 8160);
