/**
 * The operation table and the retry policy, the same contract as the Python client's
 * (`memory_engine_client._core`). No I/O here.
 */
import type { paths } from "./generated/openapi.js";

/** An HTTP method of an operation. */
export type HttpMethod = "get" | "put" | "post" | "delete";

/** The paths of the OpenAPI document that have an operation for `M`. */
export type PathWith<M extends HttpMethod> = {
  [P in keyof paths]: paths[P] extends Record<M, object> ? P : never;
}[keyof paths];

/**
 * One HTTP operation of the API. `idempotent` calls are retried on 429/5xx and connection errors;
 * `requestMedia` / `responseMedia` name a body that is not JSON (the JSONL of import and export).
 */
export interface Operation {
  readonly method: Uppercase<HttpMethod>;
  readonly path: keyof paths;
  readonly idempotent: boolean;
  readonly requestMedia?: string;
  readonly responseMedia?: string;
}

/** The media type of a memory export (one JSON object a line), and of an import's body. */
export const JSONL = "application/x-ndjson";

/** An operation of the document: `path` must have a `method` operation there, or this does not compile. */
function op<M extends HttpMethod>(method: M, path: PathWith<M>, idempotent: boolean,
  media: { requestMedia?: string; responseMedia?: string } = {}): Operation {
  return { method: method.toUpperCase() as Uppercase<M>, path, idempotent, ...media };
}

/**
 * Every public operation of the API, by the Python client's method name (local-only stand-ins and
 * POST /v1/mcp, which MCP clients speak, are not here). The tests check this table against the
 * OpenAPI document and against the Python client's table.
 */
export const OPERATIONS = {
  health: op("get", "/v1/health", true),
  create_memory: op("post", "/v1/memories", false),
  list_memories: op("get", "/v1/memories", true),
  get_memory: op("get", "/v1/memories/{memory_id}", true),
  update_memory: op("put", "/v1/memories/{memory_id}", true),
  // 204 without a body; ?purge=true answers 200 with the counts
  delete_memory: op("delete", "/v1/memories/{memory_id}", true),
  export_memory: op("get", "/v1/memories/{memory_id}/export", true, { responseMedia: JSONL }),
  // every import creates a new memory: never repeated
  import_memory: op("post", "/v1/memories/import", false, { requestMedia: JSONL }),
  // idempotent by turn_id: the client gives every turn one, so a repeat keeps the stored turns
  record_turns: op("post", "/v1/memories/{memory_id}/turns", true),
  list_turns: op("get", "/v1/memories/{memory_id}/turns", true),
  delete_turn: op("delete", "/v1/memories/{memory_id}/turns/{turn_id}", true),
  delete_conversation_turns: op("delete", "/v1/memories/{memory_id}/turns", true),
  write_entry: op("post", "/v1/memory-entries", false),
  list_entries: op("get", "/v1/memory-entries", true),
  get_entry: op("get", "/v1/memory-entries/{entry_id}", true),
  replace_entry: op("put", "/v1/memory-entries/{entry_id}", true),
  delete_entry: op("delete", "/v1/memory-entries/{entry_id}", true),
  // the manual write path in one transaction: a repeat answers `skipped` for what is stored
  write_entries: op("post", "/v1/memory-entries/batch", true),
  // an id already deleted answers `not_found`
  delete_entries: op("delete", "/v1/memory-entries/batch", true),
  // a repeat deletes nothing more (zero counts)
  forget: op("post", "/v1/forget", true),
  list_extraction_runs: op("get", "/v1/extraction-runs", true),
  // search reads only: safe to repeat
  search: op("post", "/v1/knowledge/search", true),
  // the same text at the same path is a no-op (200), so creating documents is safe to repeat
  create_document: op("post", "/v1/documents", true),
  create_documents: op("post", "/v1/documents/batch", true),
  create_upload: op("post", "/v1/documents/uploads", true),
  list_documents: op("get", "/v1/documents", true),
  get_document: op("get", "/v1/documents/{document_id}", true),
  document_status: op("get", "/v1/documents/{document_id}/status", true),
  delete_document: op("delete", "/v1/documents/{document_id}", true),
  reingest_document: op("post", "/v1/documents/{document_id}/ingest", false),
  create_ingestion_rule: op("post", "/v1/ingestion-rules", false),
  list_ingestion_rules: op("get", "/v1/ingestion-rules", true),
  get_ingestion_rule: op("get", "/v1/ingestion-rules/{rule_id}", true),
  replace_ingestion_rule: op("put", "/v1/ingestion-rules/{rule_id}", true),
  delete_ingestion_rule: op("delete", "/v1/ingestion-rules/{rule_id}", true),
  embed: op("post", "/v1/embeddings", true),
} as const satisfies Record<string, Operation>;

export type OperationName = keyof typeof OPERATIONS;

/** Statuses worth another try of an idempotent call. */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** The retry settings of a client (milliseconds). */
export interface RetryOptions {
  /** further attempts of an idempotent call (default 2) */
  maxRetries?: number;
  /** the first wait; doubles each attempt, jittered (default 500) */
  backoffMs?: number;
  /** no wait is longer, a `Retry-After` included (default 8000) */
  maxBackoffMs?: number;
}

/**
 * `maxRetries` further attempts of an idempotent call, waiting `backoffMs * 2**attempt` (jittered to
 * half..all of it, at most `maxBackoffMs`); a `Retry-After` header (seconds or an HTTP date) wins, capped
 * at `maxBackoffMs`.
 */
export class RetryPolicy {
  readonly maxRetries: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;

  constructor({ maxRetries = 2, backoffMs = 500, maxBackoffMs = 8000 }: RetryOptions = {}) {
    this.maxRetries = maxRetries;
    this.backoffMs = backoffMs;
    this.maxBackoffMs = maxBackoffMs;
  }

  /** The wait before retry number `attempt + 1`, in milliseconds. */
  delay(attempt: number, retryAfter: string | null = null, now: number = Date.now()): number {
    if (retryAfter !== null) {
      const seconds = Number(retryAfter.trim());
      if (retryAfter.trim() !== "" && Number.isFinite(seconds)) {
        return Math.min(this.maxBackoffMs, Math.max(0, seconds * 1000));
      }
      const date = Date.parse(retryAfter);
      if (!Number.isNaN(date)) {
        return Math.min(this.maxBackoffMs, Math.max(0, date - now));
      }
    }
    const base = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
    return base * (0.5 + Math.random() / 2);
  }

  /** Whether a call that got `status` (null: no answer at all) is tried again. */
  shouldRetry(operation: Operation, attempt: number, status: number | null): boolean {
    if (!operation.idempotent || attempt >= this.maxRetries) {
      return false;
    }
    return status === null || RETRY_STATUSES.has(status);
  }
}
