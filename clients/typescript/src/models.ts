/**
 * Named types of the API's models and query parameters, all taken from the generated
 * `generated/openapi.ts` (`make ts-client` regenerates it from docs/openapi.json): nothing here is
 * written by hand but the names.
 */
import type { components, paths } from "./generated/openapi.js";
import type { HttpMethod, PathWith } from "./operations.js";

type Schemas = components["schemas"];

export type Health = Schemas["Health"];
export type Memory = Schemas["Memory"];
export type MemoryFields = Schemas["MemoryFields"];
export type MemoryPage = Schemas["MemoryPage"];
export type ForgetRequest = Schemas["ForgetRequest"];
export type ForgetResult = Schemas["ForgetResult"];
export type ImportResult = Schemas["ImportResult"];
export type EntryCreateRequest = Schemas["EntryCreateRequest"];
export type EntryWriteResult = Schemas["EntryWriteResult"];
export type EntryReplacement = Schemas["EntryReplacement"];
export type EntryBatch = Schemas["EntryBatch"];
export type EntryBatchItem = Schemas["EntryBatchItem"];
export type EntryBatchResult = Schemas["EntryBatchResult"];
export type EntryBatchDeleteResult = Schemas["EntryBatchDeleteResult"];
export type MemoryEntry = Schemas["MemoryEntry"];
export type TurnInput = Schemas["TurnInput"];
export type TurnsRecorded = Schemas["TurnsRecorded"];
export type Turn = Schemas["Turn"];
export type TurnPage = Schemas["TurnPage"];
export type MemoryEntryPage = Schemas["MemoryEntryPage"];
export type SearchRequest = Schemas["SearchRequest"];
export type SearchResponse = Schemas["SearchResponseBody"];
export type SearchResult = SearchResponse["results"][number];
export type MemoryResult = Schemas["MemoryResult"];
export type DocumentResult = Schemas["DocumentResult"];
/** A recorded conversation turn in the fused results (`include: ["episodes"]`). */
export type EpisodeSearchResult = Schemas["EpisodeSearchResult"];
export type ExtractionRunPage = Schemas["ExtractionRunPage"];
export type ExtractionRun = ExtractionRunPage["data"][number];
export type CreateTextDocument = Schemas["CreateTextDocument"];
export type TextDocumentBatch = Schemas["TextDocumentBatch"];
export type Document = Schemas["Document"];
export type DocumentBatchResult = Schemas["DocumentBatchResult"];
export type DocumentPage = Schemas["DocumentPage"];
export type DocumentStatusView = Schemas["DocumentStatusView"];
export type UploadRequest = Schemas["UploadRequest"];
export type UploadUrl = Schemas["UploadUrl"];
export type ReingestRequest = Schemas["ReingestRequest"];
export type IngestionRuleFields = Schemas["IngestionRuleFields"];
export type IngestionRule = Schemas["IngestionRule"];
export type IngestionRulePage = Schemas["IngestionRulePage"];
export type EmbeddingsResponse = Schemas["EmbeddingsResponse"];
export type ErrorBody = Schemas["ErrorBody"];

/** The query parameters of the `method` operation at `path`, as the document declares them. */
export type QueryOf<P extends PathWith<M>, M extends HttpMethod> =
  paths[P][M] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type ListMemoriesQuery = QueryOf<"/v1/memories", "get">;
export type ListEntriesQuery = QueryOf<"/v1/memory-entries", "get">;
export type ListDocumentsQuery = QueryOf<"/v1/documents", "get">;
export type ListExtractionRunsQuery = QueryOf<"/v1/extraction-runs", "get">;
export type ExportQuery = QueryOf<"/v1/memories/{memory_id}/export", "get">;
export type ListTurnsQuery = QueryOf<"/v1/memories/{memory_id}/turns", "get">;

/** A list query without its cursor, `limit` being the page size: what the `iter*` methods take. */
export type IterQuery<Q> = Omit<Q, "cursor">;
