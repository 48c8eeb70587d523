-- memory-engine schema v1. Runs on PostgreSQL 16/17 (Aurora, pgvector 0.8.0) and 18 (embedded).
-- {{EMBEDDING_DIM}} is replaced by the deployment's embedding dimension when the migration runs.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE projects (
    id          text PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id            text PRIMARY KEY,
    project_id    text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name          text,
    key_prefix    text NOT NULL,          -- first characters of the key, for people to recognise it
    key_hash      text NOT NULL UNIQUE,   -- sha256 of the key; the raw key is never stored
    scopes        text[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    CONSTRAINT api_keys_scopes_valid CHECK (scopes <@ ARRAY['read', 'write', 'admin']::text[])
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);

CREATE TABLE memories (
    id           text PRIMARY KEY,
    project_id   text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text,
    tags         text[] NOT NULL DEFAULT '{}',
    metadata     jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memories_project_idx ON memories (project_id, created_at DESC, id DESC);
CREATE INDEX memories_tags_idx ON memories USING gin (tags);

CREATE TABLE memory_entries (
    id                      text PRIMARY KEY,
    project_id              text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    memory_id               text NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    content                 text NOT NULL,
    source_type             text NOT NULL DEFAULT 'manual'
        CHECK (source_type IN ('manual', 'agent', 'extraction', 'orchestration')),
    tags                    text[] NOT NULL DEFAULT '{}',
    metadata                jsonb,
    embedding               vector({{EMBEDDING_DIM}}),
    subject                 text,
    predicate               text,
    object                  text,
    confidence              real NOT NULL DEFAULT 1 CHECK (confidence >= 0 AND confidence <= 1),
    source_quote            text,
    valid_from              timestamptz,
    valid_to                timestamptz,
    source_conversation_id  text,
    source_generation_id    text,
    source_event_id         text,
    invalidated_at          timestamptz,
    superseded_by_entry_id  text REFERENCES memory_entries(id) ON DELETE SET NULL,
    invalidation_reason     text,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    search_tsv              tsvector GENERATED ALWAYS AS (
        to_tsvector('english',
            coalesce(subject, '') || ' ' || coalesce(predicate, '') || ' ' ||
            coalesce(object, '') || ' ' || content)
    ) STORED
);
CREATE INDEX memory_entries_memory_idx ON memory_entries (memory_id, created_at DESC, id DESC);
CREATE INDEX memory_entries_project_idx ON memory_entries (project_id);
CREATE INDEX memory_entries_live_idx ON memory_entries (memory_id, valid_from DESC NULLS LAST, created_at DESC)
    WHERE invalidated_at IS NULL;
CREATE INDEX memory_entries_embedding_live_idx ON memory_entries
    USING hnsw (embedding vector_cosine_ops) WHERE invalidated_at IS NULL;
CREATE INDEX memory_entries_tsv_idx ON memory_entries USING gin (search_tsv);
CREATE INDEX memory_entries_tags_idx ON memory_entries USING gin (tags);
CREATE INDEX memory_entries_superseded_idx ON memory_entries (superseded_by_entry_id)
    WHERE superseded_by_entry_id IS NOT NULL;

CREATE TABLE entities (
    id            text PRIMARY KEY,
    project_id    text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name          text NOT NULL,            -- normalized: lower case, single spaces
    display_name  text NOT NULL,
    type          text,
    embedding     vector({{EMBEDDING_DIM}}),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, name)
);
CREATE INDEX entities_embedding_idx ON entities USING hnsw (embedding vector_cosine_ops);

CREATE TABLE entry_entities (
    entry_id    text NOT NULL REFERENCES memory_entries(id) ON DELETE CASCADE,
    entity_id   text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    role        text NOT NULL CHECK (role IN ('subject', 'object', 'mention')),
    PRIMARY KEY (entry_id, entity_id, role)
);
CREATE INDEX entry_entities_entity_idx ON entry_entities (entity_id);

CREATE TABLE episodes (
    id               text PRIMARY KEY,
    project_id       text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    memory_id        text REFERENCES memories(id) ON DELETE CASCADE,
    conversation_id  text,
    turn_id          text,
    event_id         text,
    occurred_at      timestamptz,
    transcript       text NOT NULL,
    messages         jsonb NOT NULL DEFAULT '[]',
    embedding        vector({{EMBEDDING_DIM}}),
    created_at       timestamptz NOT NULL DEFAULT now(),
    search_tsv       tsvector GENERATED ALWAYS AS (to_tsvector('english', transcript)) STORED
);
CREATE UNIQUE INDEX episodes_event_idx ON episodes (project_id, event_id) WHERE event_id IS NOT NULL;
CREATE INDEX episodes_memory_idx ON episodes (memory_id, occurred_at DESC);
CREATE INDEX episodes_conversation_idx ON episodes (project_id, conversation_id);
CREATE INDEX episodes_embedding_idx ON episodes USING hnsw (embedding vector_cosine_ops);
CREATE INDEX episodes_tsv_idx ON episodes USING gin (search_tsv);

CREATE TABLE documents (
    id                 text PRIMARY KEY,
    project_id         text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    path               text NOT NULL,
    title              text,
    content_type       text,
    size_bytes         bigint,
    sha256             text,
    source_bucket      text,
    source_key         text,
    tags               text[] NOT NULL DEFAULT '{}',
    metadata           jsonb,
    chunk_strategy     text NOT NULL DEFAULT 'page'
        CHECK (chunk_strategy IN ('page', 'whole', 'size', 'recursive')),
    chunk_size         integer NOT NULL DEFAULT 1000 CHECK (chunk_size > 0),
    chunk_overlap      integer NOT NULL DEFAULT 200 CHECK (chunk_overlap >= 0),
    status             text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'processing', 'ready', 'failed')),
    total_pages        integer,
    total_chunks       integer,
    indexed_chunks     integer NOT NULL DEFAULT 0,
    error              text,
    -- chunks of generation active_generation are the searchable set; a re-ingest writes
    -- generation active_generation + 1 and flips this pointer when the new set is complete
    active_generation  integer NOT NULL DEFAULT 0,
    ingest_generation  integer NOT NULL DEFAULT 0,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, path)
);
CREATE INDEX documents_project_idx ON documents (project_id, created_at DESC, id DESC);
CREATE INDEX documents_path_idx ON documents (project_id, path text_pattern_ops);
CREATE INDEX documents_tags_idx ON documents USING gin (tags);

CREATE TABLE document_chunks (
    id           text PRIMARY KEY,
    project_id   text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    document_id  text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    generation   integer NOT NULL DEFAULT 0,
    chunk_index  integer NOT NULL,
    page         integer,
    content      text NOT NULL,
    embedding    vector({{EMBEDDING_DIM}}),
    created_at   timestamptz NOT NULL DEFAULT now(),
    search_tsv   tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    UNIQUE (document_id, generation, chunk_index)
);
CREATE INDEX document_chunks_project_idx ON document_chunks (project_id);
CREATE INDEX document_chunks_embedding_idx ON document_chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX document_chunks_tsv_idx ON document_chunks USING gin (search_tsv);

CREATE TABLE extraction_runs (
    id               text PRIMARY KEY,
    project_id       text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    event_id         text NOT NULL,
    memory_id        text REFERENCES memories(id) ON DELETE SET NULL,
    conversation_id  text,
    turn_id          text,
    episode_id       text REFERENCES episodes(id) ON DELETE SET NULL,
    status           text NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'completed', 'failed')),
    summary          jsonb,
    error            text,
    attempts         integer NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, event_id)
);

CREATE TABLE ingestion_rules (
    id                 text PRIMARY KEY,
    project_id         text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    content_type_glob  text NOT NULL,
    converter_url      text NOT NULL,
    native_extraction  text NOT NULL DEFAULT 'first' CHECK (native_extraction IN ('first', 'skip')),
    chunk_strategy     text CHECK (chunk_strategy IN ('page', 'whole', 'size', 'recursive')),
    chunk_size         integer,
    chunk_overlap      integer,
    created_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, content_type_glob)
);
