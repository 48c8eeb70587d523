/**
 * `MemoryEngineClient`: every public operation of the API as an awaited method, the same operations
 * and the same contract as the Python client (`memory_engine_client`). Bodies and query parameters use
 * the API's own field names (snake_case), typed from the OpenAPI document.
 */
import { errorFromResponse } from "./errors.js";
import type * as m from "./models.js";
import { Transport, type ClientOptions } from "./transport.js";

/** A page of a list route. */
interface Page<T> {
  data: T[];
  next_cursor?: string | null;
}

/** Every item of a list route, following `next_cursor` page by page. */
export async function* paginate<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.data;
    if (!page.next_cursor) {
      return;
    }
    cursor = page.next_cursor;
  }
}

/** The JSONL body of an import: a string or bytes as they are, or one line per object. */
export function jsonlBody(data: string | Uint8Array | Iterable<Record<string, unknown>>): string | Uint8Array {
  if (typeof data === "string" || data instanceof Uint8Array) {
    return data;
  }
  let out = "";
  for (const line of data) {
    out += `${JSON.stringify(line)}\n`;
  }
  return out;
}

/** Each page-size query of an `iter*` method: `limit` is the page size (default 100). */
function pageQuery<Q extends { limit?: number }>(query: m.IterQuery<Q>, cursor: string | undefined): Q {
  return { limit: 100, ...query, cursor } as unknown as Q;
}

/**
 * `new MemoryEngineClient({ baseUrl, apiKey })`; both default to `$MEMORY_ENGINE_URL` (else
 * http://127.0.0.1:8787) and `$MEMORY_ENGINE_API_KEY`. `timeoutMs` is per attempt; idempotent calls
 * are retried on 429/5xx and connection errors (`maxRetries`, exponential backoff, `Retry-After`
 * honoured), writes never. Errors throw `APIError` subclasses carrying the SPEC error code.
 */
export class MemoryEngineClient {
  private readonly http: Transport;

  constructor(options: ClientOptions = {}) {
    this.http = new Transport(options);
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  // --- health ---
  health(): Promise<m.Health> {
    return this.http.send("health");
  }

  // --- memories ---
  /** Fields: description, tags, metadata, default_ttl (seconds). */
  createMemory(name: string, fields: Omit<m.MemoryFields, "name"> = {}): Promise<m.Memory> {
    return this.http.send("create_memory", { body: { ...fields, name } });
  }

  listMemories(query: m.ListMemoriesQuery = {}): Promise<m.MemoryPage> {
    return this.http.send("list_memories", { query });
  }

  /** Every memory (newest first), following `next_cursor`: `for await (const memory of ...)`. */
  iterMemories(query: m.IterQuery<m.ListMemoriesQuery> = {}): AsyncGenerator<m.Memory> {
    return paginate((cursor) => this.listMemories(pageQuery(query, cursor)));
  }

  getMemory(memoryId: string): Promise<m.Memory> {
    return this.http.send("get_memory", { pathParams: { memory_id: memoryId } });
  }

  /** Fields sent replace the stored ones (name, description, tags, metadata, default_ttl). */
  updateMemory(memoryId: string, fields: Partial<m.MemoryFields>): Promise<m.Memory> {
    return this.http.send("update_memory", { pathParams: { memory_id: memoryId }, body: fields });
  }

  /**
   * Deletes the memory, its entries and episodes (null: the API answers 204). `purge: true` also
   * deletes its extraction runs and the entities no entry links any more, and answers the counts.
   * A repeat is a NotFoundError.
   */
  deleteMemory(memoryId: string, options?: { purge?: false }): Promise<null>;
  deleteMemory(memoryId: string, options: { purge: true }): Promise<m.ForgetResult>;
  deleteMemory(memoryId: string, options: { purge?: boolean }): Promise<m.ForgetResult | null>;
  deleteMemory(memoryId: string, { purge = false }: { purge?: boolean } = {}): Promise<m.ForgetResult | null> {
    return this.http.send("delete_memory", { pathParams: { memory_id: memoryId }, query: { purge: purge || undefined } });
  }

  // --- export and import ---
  /** The memory's JSONL export, one parsed line at a time as it arrives (`for await`). */
  async *exportMemory(memoryId: string, query: m.ExportQuery = {}): AsyncGenerator<Record<string, unknown>> {
    for await (const line of this.http.lines("export_memory", { pathParams: { memory_id: memoryId }, query })) {
      if (line.trim() !== "") {
        yield JSON.parse(line) as Record<string, unknown>;
      }
    }
  }

  /** Imports an export as a new memory (JSONL text or bytes, or parsed lines); never retried. */
  importMemory(data: string | Uint8Array | Iterable<Record<string, unknown>>): Promise<m.ImportResult> {
    return this.http.send("import_memory", { content: jsonlBody(data) });
  }

  // --- forgetting ---
  /** Hard-deletes what came from a conversation (or an entity of a memory); retried (a repeat deletes nothing more). */
  forget(request: m.ForgetRequest): Promise<m.ForgetResult> {
    return this.http.send("forget", { body: request });
  }

  // --- conversation turns ---
  /**
   * Records up to 100 turns as the memory's episodes, in order. Turns without a `turn_id` get a fresh
   * one here, so the call is retried safely; a `turn_id` already stored keeps the stored turn
   * (`created: false`). `extract: true` queues the new user/assistant turns for fact extraction.
   */
  recordTurns(memoryId: string, conversationId: string, turns: m.TurnInput[],
    { extract }: { extract?: boolean } = {}): Promise<m.TurnsRecorded> {
    const body = {
      conversation_id: conversationId,
      turns: turns.map((turn) => ({ ...turn, turn_id: turn.turn_id ?? globalThis.crypto.randomUUID() })),
      ...(extract === undefined ? {} : { extract }),
    };
    return this.http.send("record_turns", { pathParams: { memory_id: memoryId }, body });
  }

  /** A page of the conversation's turns, oldest first (`order: "desc"`: newest first). */
  listTurns(memoryId: string, query: m.ListTurnsQuery): Promise<m.TurnPage> {
    return this.http.send("list_turns", { pathParams: { memory_id: memoryId }, query });
  }

  /** Every turn of the conversation in order, following `next_cursor`. */
  iterTurns(memoryId: string, query: m.IterQuery<m.ListTurnsQuery>): AsyncGenerator<m.Turn> {
    return paginate((cursor) => this.listTurns(memoryId, pageQuery(query, cursor)));
  }

  /** Deletes the turn (in `conversationId` when given); `NotFoundError` when none matches. */
  async deleteTurn(memoryId: string, turnId: string, { conversationId }: { conversationId?: string } = {}): Promise<void> {
    await this.http.send("delete_turn", {
      pathParams: { memory_id: memoryId, turn_id: turnId }, query: { conversation_id: conversationId },
    });
  }

  /** Deletes every turn of the conversation (facts extracted from them stay: see `forget`). */
  async deleteConversationTurns(memoryId: string, conversationId: string): Promise<void> {
    await this.http.send("delete_conversation_turns", {
      pathParams: { memory_id: memoryId }, query: { conversation_id: conversationId },
    });
  }

  // --- memory entries ---
  /**
   * The write funnel; `result.action` says what happened. `source_type: "agent"` (with
   * `agent: { generation_id }`) is the agent path: similar facts may merge or supersede. Never retried.
   */
  writeEntry(memoryId: string, content: string,
    fields: Omit<m.EntryCreateRequest, "memory_id" | "content"> = {}): Promise<m.EntryWriteResult> {
    return this.http.send("write_entry", { body: { ...fields, memory_id: memoryId, content } });
  }

  listEntries(query: m.ListEntriesQuery = {}): Promise<m.MemoryEntryPage> {
    return this.http.send("list_entries", { query });
  }

  iterEntries(query: m.IterQuery<m.ListEntriesQuery> = {}): AsyncGenerator<m.MemoryEntry> {
    return paginate((cursor) => this.listEntries(pageQuery(query, cursor)));
  }

  /** Up to 100 entries in one transaction (the manual path); retried: a repeat skips what is stored. */
  writeEntries(entries: m.EntryBatch["entries"], options: Omit<m.EntryBatch, "entries"> = {}): Promise<m.EntryBatchResult> {
    return this.http.send("write_entries", { body: { ...options, entries } });
  }

  /** Deletes up to 100 entries by id; each answers `deleted` or `not_found`. */
  deleteEntries(ids: string[]): Promise<m.EntryBatchDeleteResult> {
    return this.http.send("delete_entries", { body: { ids } });
  }

  getEntry(entryId: string): Promise<m.MemoryEntry> {
    return this.http.send("get_entry", { pathParams: { entry_id: entryId } });
  }

  replaceEntry(entryId: string, fields: m.EntryReplacement): Promise<m.MemoryEntry> {
    return this.http.send("replace_entry", { pathParams: { entry_id: entryId }, body: fields });
  }

  async deleteEntry(entryId: string): Promise<void> {
    await this.http.send("delete_entry", { pathParams: { entry_id: entryId } });
  }

  // --- search ---
  /** The fused search: documents when a query is given, memories when `memory_ids`/`memory_tags` are. */
  search(query: string | null, fields: Omit<m.SearchRequest, "query"> = {}): Promise<m.SearchResponse> {
    return this.http.send("search", { body: query === null ? fields : { ...fields, query } });
  }

  // --- extraction runs ---
  /** What fact extraction did with each `turn.completed` event, newest first. */
  listExtractionRuns(query: m.ListExtractionRunsQuery = {}): Promise<m.ExtractionRunPage> {
    return this.http.send("list_extraction_runs", { query });
  }

  iterExtractionRuns(query: m.IterQuery<m.ListExtractionRunsQuery> = {}): AsyncGenerator<m.ExtractionRun> {
    return paginate((cursor) => this.listExtractionRuns(pageQuery(query, cursor)));
  }

  // --- documents ---
  createDocument(path: string, content: string,
    fields: Omit<m.CreateTextDocument, "path" | "content"> = {}): Promise<m.Document> {
    return this.http.send("create_document", { body: { ...fields, path, content } });
  }

  createDocuments(documents: m.TextDocumentBatch["documents"]): Promise<m.DocumentBatchResult> {
    return this.http.send("create_documents", { body: { documents } });
  }

  createUpload(path: string, fields: Omit<m.UploadRequest, "path"> = {}): Promise<m.UploadUrl> {
    return this.http.send("create_upload", { body: { ...fields, path } });
  }

  /** Asks for an upload URL and PUTs `data` to it (S3 on AWS, the engine locally): ingestion starts. */
  async uploadDocument(path: string, data: Uint8Array | string,
    fields: Omit<m.UploadRequest, "path"> = {}): Promise<m.UploadUrl> {
    const upload = await this.createUpload(path, fields);
    const headers: Record<string, string> = { ...upload.headers };
    if (upload.upload_url.startsWith(this.baseUrl) && this.http.apiKey) {
      headers["Authorization"] = `Bearer ${this.http.apiKey}`;
    }
    const response = await this.http.fetchImpl(upload.upload_url, {
      method: upload.method ?? "PUT", headers, body: data as BodyInit,
    });
    if (response.status >= 400) {
      let body: unknown = null;
      try {
        body = await response.json();
      } catch {
        // not the SPEC body (S3 answers XML): the generic error
      }
      throw errorFromResponse(response.status, body);
    }
    return upload;
  }

  listDocuments(query: m.ListDocumentsQuery = {}): Promise<m.DocumentPage> {
    return this.http.send("list_documents", { query });
  }

  iterDocuments(query: m.IterQuery<m.ListDocumentsQuery> = {}): AsyncGenerator<m.Document> {
    return paginate((cursor) => this.listDocuments(pageQuery(query, cursor)));
  }

  getDocument(documentId: string): Promise<m.Document> {
    return this.http.send("get_document", { pathParams: { document_id: documentId } });
  }

  documentStatus(documentId: string): Promise<m.DocumentStatusView> {
    return this.http.send("document_status", { pathParams: { document_id: documentId } });
  }

  async deleteDocument(documentId: string): Promise<void> {
    await this.http.send("delete_document", { pathParams: { document_id: documentId } });
  }

  reingestDocument(documentId: string, fields: m.ReingestRequest = {}): Promise<m.Document> {
    return this.http.send("reingest_document", { pathParams: { document_id: documentId }, body: fields });
  }

  // --- ingestion rules (admin scope to change them) ---
  /** `converter`: `{ type: "http", url, headers?, timeout_s? }` or `{ type: "ocr" }`. */
  createIngestionRule(rule: m.IngestionRuleFields): Promise<m.IngestionRule> {
    return this.http.send("create_ingestion_rule", { body: rule });
  }

  listIngestionRules(): Promise<m.IngestionRulePage> {
    return this.http.send("list_ingestion_rules");
  }

  getIngestionRule(ruleId: string): Promise<m.IngestionRule> {
    return this.http.send("get_ingestion_rule", { pathParams: { rule_id: ruleId } });
  }

  replaceIngestionRule(ruleId: string, rule: m.IngestionRuleFields): Promise<m.IngestionRule> {
    return this.http.send("replace_ingestion_rule", { pathParams: { rule_id: ruleId }, body: rule });
  }

  async deleteIngestionRule(ruleId: string): Promise<void> {
    await this.http.send("delete_ingestion_rule", { pathParams: { rule_id: ruleId } });
  }

  // --- embeddings ---
  embed(input: string | string[]): Promise<m.EmbeddingsResponse> {
    return this.http.send("embed", { body: typeof input === "string" ? { input } : { inputs: input } });
  }
}
