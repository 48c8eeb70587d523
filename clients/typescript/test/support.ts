/** What the test files share: the live engine's client, and a scripted `fetch` for the offline tests. */
import { MemoryEngineClient, type ClientOptions } from "memory-engine-client";

/** A client of the engine `run.ts` started (admin key unless another is given). */
export function liveClient(options: ClientOptions = {}): MemoryEngineClient {
  const baseUrl = process.env["MEMORY_ENGINE_TEST_URL"];
  const apiKey = process.env["MEMORY_ENGINE_TEST_KEY"];
  if (!baseUrl || !apiKey) {
    throw new Error("no engine: run the tests with `npm test` (test/run.ts starts one)");
  }
  return new MemoryEngineClient({ baseUrl, apiKey, ...options });
}

/** A unique suffix, so test files sharing one engine never see each other's data. */
export function unique(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** One request a scripted `fetch` received. */
export interface Seen {
  method: string;
  url: URL;
  headers: Headers;
  body: string | null;
}

/** A `fetch` answering with `handler`; every request lands in `seen`. */
export function scriptedFetch(handler: (request: Seen, index: number) => Response | Promise<Response>,
  seen: Seen[] = []): { fetch: typeof fetch; seen: Seen[] } {
  const fake = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const body = init.body === undefined || init.body === null ? null
      : typeof init.body === "string" ? init.body : new TextDecoder().decode(init.body as Uint8Array);
    const request: Seen = {
      method: init.method ?? "GET", url: new URL(String(input)), headers: new Headers(init.headers), body,
    };
    seen.push(request);
    return handler(request, seen.length - 1);
  };
  return { fetch: fake as typeof fetch, seen };
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
}

export function apiError(status: number, code: string, headers: Record<string, string> = {}): Response {
  return json(status, { error: { code, message: code, details: null } }, headers);
}
