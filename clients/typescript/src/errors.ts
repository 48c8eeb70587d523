/**
 * Typed errors, the same hierarchy as the Python client's (`memory_engine_client.errors`). Every error
 * the engine answers carries the SPEC body `{"error": {"code", "message", "details"}}`; an `APIError`
 * keeps all three and the HTTP status.
 */

/** Base class of everything this client throws. */
export class MemoryEngineError extends Error {
  override name = "MemoryEngineError";
}

/** The engine could not be reached (connection refused, DNS, TLS, a body broken off, ...). */
export class APIConnectionError extends MemoryEngineError {
  override name = "APIConnectionError";
}

/** The engine did not answer within the timeout. */
export class APITimeoutError extends APIConnectionError {
  override name = "APITimeoutError";
}

/** The engine answered an error. `code` is the SPEC's stable error code (e.g. `not_found`). */
export class APIError extends MemoryEngineError {
  override name = "APIError";
  readonly status: number;
  readonly code: string;
  readonly details: unknown;

  constructor(status: number, code: string, message: string, details: unknown = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  override toString(): string {
    return `${this.name}: ${this.status} ${this.code}: ${this.message}`;
  }
}

/** 400: malformed request. */
export class BadRequestError extends APIError {
  override name = "BadRequestError";
}

/** 401: missing, malformed, unknown or revoked API key. */
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}

/** 403: the key lacks the scope the operation needs. */
export class PermissionDeniedError extends APIError {
  override name = "PermissionDeniedError";
}

/** 404: no such resource in the key's project. */
export class NotFoundError extends APIError {
  override name = "NotFoundError";
}

/** 409: the resource's state forbids the change. */
export class ConflictError extends APIError {
  override name = "ConflictError";
}

/** 413: a body, field or metadata over its limit. */
export class PayloadTooLargeError extends APIError {
  override name = "PayloadTooLargeError";
}

/** 422: a field fails validation (`details` names each field). */
export class UnprocessableEntityError extends APIError {
  override name = "UnprocessableEntityError";
}

/** 429: too many requests (retried for idempotent calls). */
export class RateLimitError extends APIError {
  override name = "RateLimitError";
}

/** 5xx: the engine or a service behind it failed (retried for idempotent calls). */
export class ServerError extends APIError {
  override name = "ServerError";
}

const BY_STATUS: Record<number, typeof APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: UnprocessableEntityError,
  429: RateLimitError,
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The typed error of an error response: from its SPEC body, or a generic one when it has none. */
export function errorFromResponse(status: number, body: unknown): APIError {
  const detail = isRecord(body) ? body["error"] : undefined;
  let code = "http_error";
  let message = `HTTP ${status}`;
  let details: unknown = null;
  if (isRecord(detail)) {
    code = String(detail["code"] ?? "error");
    message = String(detail["message"] ?? "");
    details = detail["details"] ?? null;
  }
  const cls = BY_STATUS[status] ?? (status >= 500 ? ServerError : APIError);
  return new cls(status, code, message, details);
}
