/**
 * The HTTP side of the client: building a call from the operation table, sending it with the retries
 * its operation allows, and turning the answer into a parsed body or a typed error.
 */
import { APIConnectionError, APITimeoutError, errorFromResponse } from "./errors.js";
import { OPERATIONS, RetryPolicy, type Operation, type OperationName, type RetryOptions } from "./operations.js";

export const ENV_URL = "MEMORY_ENGINE_URL";
export const ENV_API_KEY = "MEMORY_ENGINE_API_KEY";
export const DEFAULT_URL = "http://127.0.0.1:8787";
export const USER_AGENT = "memory-engine-client-ts/0.1";

/** What a client is made with; `baseUrl` and `apiKey` default to the environment. */
export interface ClientOptions extends RetryOptions {
  /** default `$MEMORY_ENGINE_URL`, else http://127.0.0.1:8787 */
  baseUrl?: string;
  /** default `$MEMORY_ENGINE_API_KEY` */
  apiKey?: string;
  /** per attempt, until the answer's headers, and between two chunks of a streamed body (default 30000) */
  timeoutMs?: number;
  /** a `fetch` to use instead of the global one (tests, proxies, instrumentation) */
  fetch?: typeof fetch;
}

/** A query value: arrays repeat the parameter (`tags=a&tags=b`), booleans are `true`/`false`. */
export type QueryValue = string | number | boolean | readonly string[] | null | undefined;

/** One call of an operation: path parameters, query, and a JSON `body` or raw `content`. */
export interface CallInput {
  pathParams?: Record<string, string>;
  query?: Record<string, QueryValue>;
  body?: unknown;
  content?: string | Uint8Array;
}

/** A response whose body has not been read yet, and the operation it answers. */
interface Answer {
  operation: Operation;
  response: Response;
  /** stops the timer of the attempt (called when the body is read, or the stream ends) */
  done: () => void;
  /** restarts the idle timer (called on every chunk of a streamed body) */
  touch: () => void;
  timedOut: () => boolean;
}

function environment(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name];
  return value === undefined || value === "" ? undefined : value;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class Transport {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  /** the `fetch` every request goes through */
  readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? environment(ENV_URL) ?? DEFAULT_URL).replace(/\/+$/, "");
    this.apiKey = options.apiKey ?? environment(ENV_API_KEY);
    this.retry = new RetryPolicy(options);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The parsed JSON answer of a call (null for 204 or an operation without a JSON body). */
  async send<T>(name: OperationName, input: CallInput = {}): Promise<T> {
    const answer = await this.request(name, input);
    try {
      const text = await this.readText(answer);
      if (answer.response.status === 204 || text === "") {
        return null as T;
      }
      return JSON.parse(text) as T;
    } finally {
      answer.done();
    }
  }

  /** The lines of a streamed success (errors throw their typed APIError before the first line). */
  async *lines(name: OperationName, input: CallInput = {}): AsyncGenerator<string> {
    const answer = await this.request(name, input);
    const { response, operation } = answer;
    try {
      if (response.body === null) {
        return;
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let pending = "";
      for (;;) {
        let chunk: ReadableStreamReadResult<string>;
        try {
          chunk = await reader.read();
        } catch (error) {
          throw this.broken(operation, answer.timedOut(), error, "broke off");
        }
        answer.touch();
        if (chunk.done) {
          break;
        }
        pending += chunk.value;
        const parts = pending.split("\n");
        pending = parts.pop() ?? "";
        for (const line of parts) {
          yield line.endsWith("\r") ? line.slice(0, -1) : line;
        }
      }
      if (pending !== "") {
        yield pending;
      }
    } finally {
      answer.done();
      await response.body?.cancel().catch(() => undefined);
    }
  }

  /** The URL of a call (path parameters escaped, query values repeated for arrays). */
  url(operation: Operation, input: CallInput): string {
    let path: string = operation.path;
    for (const [key, value] of Object.entries(input.pathParams ?? {})) {
      path = path.replace(`{${key}}`, encodeURIComponent(value));
    }
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(input.query ?? {})) {
      if (value === undefined || value === null) {
        continue;
      }
      for (const item of Array.isArray(value) ? value : [value]) {
        query.append(key, String(item));
      }
    }
    const search = query.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ""}`;
  }

  headers(operation: Operation): Record<string, string> {
    const headers: Record<string, string> = { "User-Agent": USER_AGENT, Accept: "application/json" };
    if (this.apiKey) {
      headers["Authorization"] = `Bearer ${this.apiKey}`;
    }
    if (operation.responseMedia) {
      headers["Accept"] = `${operation.responseMedia}, application/json`;
    }
    return headers;
  }

  /** The final successful answer of a call after the retries its operation allows; an error status throws. */
  private async request(name: OperationName, input: CallInput): Promise<Answer> {
    const operation: Operation = OPERATIONS[name];
    const url = this.url(operation, input);
    const headers = this.headers(operation);
    let body: string | Uint8Array | undefined;
    if (input.content !== undefined) {
      body = input.content;
      headers["Content-Type"] = operation.requestMedia ?? "application/octet-stream";
    } else if (input.body !== undefined) {
      body = JSON.stringify(input.body);
      headers["Content-Type"] = "application/json";
    }
    for (let attempt = 0; ; attempt++) {
      let answer: Answer | null = null;
      let failure: Error | null = null;
      try {
        answer = await this.attempt(operation, url, headers, body);
      } catch (error) {
        failure = error as Error;
      }
      const status = answer?.response.status ?? null;
      if (this.retry.shouldRetry(operation, attempt, status)) {
        const retryAfter = answer?.response.headers.get("retry-after") ?? null;
        if (answer) {
          answer.done();
          await answer.response.body?.cancel().catch(() => undefined);
        }
        await sleep(this.retry.delay(attempt, retryAfter));
        continue;
      }
      if (answer === null) {
        throw failure;
      }
      if (answer.response.status >= 400) {
        let parsed: unknown = null;
        try {
          parsed = JSON.parse(await this.readText(answer));
        } catch (error) {
          if (error instanceof APIConnectionError) {
            throw error;
          }
        } finally {
          answer.done();
        }
        throw errorFromResponse(answer.response.status, parsed);
      }
      return answer;
    }
  }

  /** One attempt: the answer once its headers are in (its body unread), or a typed connection error. */
  private async attempt(operation: Operation, url: string, headers: Record<string, string>,
    body: string | Uint8Array | undefined): Promise<Answer> {
    const controller = new AbortController();
    let expired = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        expired = true;
        controller.abort();
      }, this.timeoutMs);
    };
    arm();
    const done = (): void => clearTimeout(timer);
    try {
      const response = await this.fetchImpl(url, {
        method: operation.method, headers, body: body as BodyInit | undefined, signal: controller.signal,
      });
      return { operation, response, done, touch: arm, timedOut: () => expired };
    } catch (error) {
      done();
      throw this.broken(operation, expired, error, "failed");
    }
  }

  private async readText(answer: Answer): Promise<string> {
    try {
      return await answer.response.text();
    } catch (error) {
      throw this.broken(answer.operation, answer.timedOut(), error, "broke off");
    }
  }

  private broken(operation: Operation, timedOut: boolean, error: unknown, what: string): APIConnectionError {
    const where = `${operation.method} ${operation.path}`;
    if (timedOut) {
      return new APITimeoutError(`${where} timed out after ${this.timeoutMs} ms`, { cause: error });
    }
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    return new APIConnectionError(`${where} ${what}: cannot reach ${this.baseUrl}: ${reason}`, { cause: error });
  }
}
