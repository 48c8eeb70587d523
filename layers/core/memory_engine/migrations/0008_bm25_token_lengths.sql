-- BM25 document length in tokens (docs/retrieval.md, "Keyword signal"): `search_tokens` is the
-- number of indexed tokens (stop words dropped) of a row's own text, the |d| of BM25 as a plain
-- index counts it. `length(search_tsv)`, used before, counts *distinct* lexemes, and over a fact's
-- whole column it also counted its conversation context: a long turn's own words were weighed
-- against its neighbours' (BEAM's long technical messages, keyword R@10 0.35 where a plain BM25
-- index over the same messages reads 0.40).
--
-- Adding a stored generated column rewrites the table once (an ACCESS EXCLUSIVE lock for as long
-- as that takes: about 1 s per 100,000 short facts on the development machine).

CREATE FUNCTION tsvector_tokens(tsv tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (SELECT coalesce(sum(coalesce(array_length(l.positions, 1), 1)), 0)::integer FROM unnest(tsv) l);

-- a fact's own text: the same expression as the weight-D part of `search_tsv` (0004)
ALTER TABLE memory_entries ADD COLUMN search_tokens integer GENERATED ALWAYS AS (
    tsvector_tokens(to_tsvector('english',
        coalesce(subject, '') || ' ' || coalesce(predicate, '') || ' ' ||
        coalesce(object, '') || ' ' || content))
) STORED;

-- a fact's context (weight B of `search_tsv`): its second field
ALTER TABLE memory_entries ADD COLUMN context_tokens integer GENERATED ALWAYS AS (
    tsvector_tokens(to_tsvector('english', coalesce(context, '')))
) STORED;

ALTER TABLE document_chunks ADD COLUMN search_tokens integer GENERATED ALWAYS AS (
    tsvector_tokens(to_tsvector('english', content))
) STORED;
