/** memory-engine-client: the typed TypeScript client of memory-engine's HTTP API. */
export { MemoryEngineClient, paginate, jsonlBody } from "./client.js";
export {
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  MemoryEngineError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  UnprocessableEntityError,
  errorFromResponse,
} from "./errors.js";
export { JSONL, OPERATIONS, RETRY_STATUSES, RetryPolicy } from "./operations.js";
export type { HttpMethod, Operation, OperationName, PathWith, RetryOptions } from "./operations.js";
export { DEFAULT_URL, ENV_API_KEY, ENV_URL, type ClientOptions } from "./transport.js";
export type * from "./models.js";
export type { components, paths } from "./generated/openapi.js";
