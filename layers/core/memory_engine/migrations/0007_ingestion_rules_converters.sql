-- Ingestion rules and converters (issue 14): a rule routes a content-type glob to a converter
-- (`http`: your service, `ocr`: the built-in OCR), a converter may answer later through a signed
-- callback, and each document records which rule applied and where its chunk settings came from.

-- The converter as a typed object ({"type": "http", "url", "headers"?, "timeout_s"?} or
-- {"type": "ocr"}); `converter_url` (0001) stays for rows written before, read as an `http` converter.
ALTER TABLE ingestion_rules ADD COLUMN converter jsonb;
UPDATE ingestion_rules SET converter = jsonb_build_object('type', 'http', 'url', converter_url) WHERE converter IS NULL;
ALTER TABLE ingestion_rules ALTER COLUMN converter SET NOT NULL;
ALTER TABLE ingestion_rules ALTER COLUMN converter_url DROP NOT NULL;
ALTER TABLE ingestion_rules ADD COLUMN file_delivery text NOT NULL DEFAULT 'base64'
    CHECK (file_delivery IN ('base64', 'download_url'));
ALTER TABLE ingestion_rules ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();

-- The effective settings of the document's last ingestion: the rule that applied (NULL: none) and
-- where the chunk settings came from (`request` fields, the `rule`, or the entry point's `default`).
ALTER TABLE documents ADD COLUMN ingestion_rule_id text;
ALTER TABLE documents ADD COLUMN chunk_settings_source text NOT NULL DEFAULT 'default'
    CHECK (chunk_settings_source IN ('request', 'rule', 'default'));

-- A deferred conversion: the converter answered {"status": "pending"} and will POST the pages to
-- the signed callback URL. One row per (document, generation); `task_token` is the Step Functions
-- token of the waiting state (AWS), `delivered_at` is set once, by the first valid callback.
CREATE TABLE converter_callbacks (
    document_id   text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    generation    integer NOT NULL,
    project_id    text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    converter_url text NOT NULL,
    expires_at    timestamptz NOT NULL,
    task_token    text,
    pages_key     text,
    total_pages   integer,
    error         text,
    delivered_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (document_id, generation)
);
CREATE INDEX converter_callbacks_project_idx ON converter_callbacks (project_id);
