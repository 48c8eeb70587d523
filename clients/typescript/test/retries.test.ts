/**
 * Retries, backoff, timeouts and typed errors of the client on a scripted `fetch` (no network), the same
 * cases as the Python client's tests/client/test_client_retries.py: idempotent calls are retried on
 * 429/5xx and connection errors, writes never are.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  APIConnectionError, APIError, APITimeoutError, AuthenticationError, BadRequestError, ConflictError,
  MemoryEngineClient, MemoryEngineError, NotFoundError, PayloadTooLargeError, PermissionDeniedError,
  RateLimitError, RetryPolicy, ServerError, UnprocessableEntityError,
} from "memory-engine-client";
import { apiError, json, scriptedFetch, type Seen } from "./support.js";

const HEALTH = { status: "ok", version: "0.1.0", database: true };

function client(handler: (request: Seen, index: number) => Response | Promise<Response>, maxRetries = 2) {
  const scripted = scriptedFetch(handler);
  const me = new MemoryEngineClient({
    baseUrl: "http://engine", apiKey: "me_k", maxRetries, backoffMs: 0, fetch: scripted.fetch,
  });
  return { me, seen: scripted.seen };
}

test("an idempotent call is retried on 503 then succeeds", async () => {
  const { me, seen } = client((_, i) => (i < 2 ? apiError(503, "database_error") : json(200, HEALTH)));
  assert.equal((await me.health()).status, "ok");
  assert.equal(seen.length, 3);
  assert.equal(seen[0]?.headers.get("authorization"), "Bearer me_k");
});

test("retries stop after maxRetries with the typed error", async () => {
  const { me, seen } = client(() => apiError(429, "rate_limited"), 1);
  await assert.rejects(me.listMemories(), (error: unknown) =>
    error instanceof RateLimitError && error.code === "rate_limited" && error.status === 429);
  assert.equal(seen.length, 2);
});

test("a write is never retried, and unset fields are not sent", async () => {
  const { me, seen } = client(() => apiError(503, "dependency_unavailable"));
  await assert.rejects(me.writeEntry("mem_1", "a fact"), ServerError);
  assert.equal(seen.length, 1);
  assert.deepEqual(JSON.parse(seen[0]?.body ?? ""), { memory_id: "mem_1", content: "a fact" });
});

test("connection errors and timeouts are typed", async () => {
  const refused = client(() => {
    throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED") });
  });
  await assert.rejects(refused.me.health(), (error: unknown) =>
    error instanceof APIConnectionError && !(error instanceof APITimeoutError) && /ECONNREFUSED/.test(error.message));
  assert.equal(refused.seen.length, 3);

  // a fetch that never answers until it is aborted
  const hanging = scriptedFetch(() => new Promise<Response>(() => undefined));
  const slowFetch = (async (input: string | URL | Request, init: RequestInit = {}) => {
    void hanging.fetch(input, init);
    return new Promise<Response>((_, reject) => {
      init.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
    });
  }) as typeof fetch;
  const slow = new MemoryEngineClient({ baseUrl: "http://engine", maxRetries: 0, timeoutMs: 20, fetch: slowFetch });
  await assert.rejects(slow.health(), APITimeoutError);
  assert.equal(hanging.seen.length, 1);
});

test("backoff grows, is capped, and honours Retry-After (seconds or a date)", () => {
  const policy = new RetryPolicy({ maxRetries: 5, backoffMs: 1000, maxBackoffMs: 4000 });
  for (let i = 0; i < 20; i++) {
    const first = policy.delay(0);
    const third = policy.delay(2);
    assert.ok(first >= 500 && first <= 1000, String(first));
    assert.ok(third >= 2000 && third <= 4000, String(third));
    assert.ok(policy.delay(10) <= 4000);
  }
  assert.equal(policy.delay(0, "3"), 3000);
  assert.equal(policy.delay(0, "120"), 4000);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(policy.delay(0, "Thu, 01 Jan 2026 00:00:02 GMT", now), 2000);
  const fallback = policy.delay(0, "soon");
  assert.ok(fallback >= 500 && fallback <= 1000);
});

test("the client waits what Retry-After says rather than its own backoff", async () => {
  // an hour of backoff would hang the test: the answer's Retry-After: 0 is what the client waits
  const scripted = scriptedFetch((_, i) => (i === 0 ? apiError(429, "rate_limited", { "Retry-After": "0" }) : json(200, HEALTH)));
  const me = new MemoryEngineClient({
    baseUrl: "http://engine", backoffMs: 3_600_000, maxBackoffMs: 3_600_000, fetch: scripted.fetch,
  });
  assert.equal((await me.health()).status, "ok");
  assert.equal(scripted.seen.length, 2);
});

test("a batch write and forget are retried, an import never", async () => {
  const batch = { results: [], created: 0, skipped: 0, rejected: 0 };
  const counts = { deleted: { entries: 0, episodes: 0, extraction_runs: 0, entities: 0 } };
  const { me, seen } = client((request, i) => {
    if (i % 2 === 0) {
      return apiError(503, "database_error");
    }
    return json(200, request.url.pathname.endsWith("/batch") ? batch : counts);
  });
  assert.equal((await me.writeEntries([{ memory_id: "mem_1", content: "a fact" }])).created, 0);
  assert.equal(seen.length, 2); // a repeat of the batch skips what is stored: safe
  assert.deepEqual(JSON.parse(seen[1]?.body ?? ""), { entries: [{ memory_id: "mem_1", content: "a fact" }] });
  assert.equal((await me.forget({ conversation_id: "conv-1" })).deleted.entries, 0);
  assert.equal(seen.length, 4);
  assert.deepEqual(JSON.parse(seen[3]?.body ?? ""), { conversation_id: "conv-1" });

  seen.length = 0;
  await assert.rejects(me.importMemory([{ type: "header" }, { type: "memory" }]), ServerError);
  assert.equal(seen.length, 1); // every import creates a memory: never repeated
  assert.equal(seen[0]?.headers.get("content-type"), "application/x-ndjson");
  assert.equal(seen[0]?.body, '{"type":"header"}\n{"type":"memory"}\n');
});

test("an export is retried before it streams, then yields parsed lines", async () => {
  const { me, seen } = client((_, i) => (i === 0 ? apiError(429, "rate_limited")
    : new Response('{"type":"header"}\n\n{"type":"memory","id":"mem_1"}\n', {
      status: 200, headers: { "Content-Type": "application/x-ndjson" },
    })));
  const lines: unknown[] = [];
  for await (const line of me.exportMemory("mem_1", { vectors: false })) {
    lines.push(line);
  }
  assert.deepEqual(lines, [{ type: "header" }, { type: "memory", id: "mem_1" }]);
  assert.equal(seen.length, 2);
  assert.equal(seen[1]?.url.pathname, "/v1/memories/mem_1/export");
  assert.equal(seen[1]?.url.searchParams.get("vectors"), "false");
  assert.match(seen[1]?.headers.get("accept") ?? "", /^application\/x-ndjson/);
});

test("deleteMemory is null on 204 and the counts on a purge", async () => {
  const { me, seen } = client((request) => (request.url.searchParams.get("purge") === "true"
    ? json(200, { deleted: { entries: 3, episodes: 1, extraction_runs: 2, entities: 1 } })
    : new Response(null, { status: 204 })));
  assert.equal(await me.deleteMemory("mem_1"), null);
  const purged = await me.deleteMemory("mem_1", { purge: true });
  assert.deepEqual([purged.deleted.entries, purged.deleted.extraction_runs], [3, 2]);
  assert.equal(seen[0]?.url.search, "");
});

test("each error status maps onto its class, keeping the SPEC body", async () => {
  const classes: [number, typeof APIError][] = [
    [400, BadRequestError], [401, AuthenticationError], [403, PermissionDeniedError], [404, NotFoundError],
    [409, ConflictError], [413, PayloadTooLargeError], [422, UnprocessableEntityError], [429, RateLimitError],
    [500, ServerError], [502, ServerError], [418, APIError],
  ];
  for (const [status, cls] of classes) {
    const details = [{ field: "name", message: "required", type: "missing" }];
    const { me } = client(() => json(status, { error: { code: `c${status}`, message: `m${status}`, details } }), 0);
    await assert.rejects(me.createMemory("x"), (error: unknown) => {
      assert.ok(error instanceof cls && error instanceof MemoryEngineError, `${status}: ${String(error)}`);
      assert.equal(error.constructor, cls);
      assert.deepEqual([error.status, error.code, error.message, error.details], [status, `c${status}`, `m${status}`, details]);
      return true;
    });
  }
  const { me } = client(() => new Response("<html>bad gateway</html>", { status: 502 }), 0);
  await assert.rejects(me.health(), (error: unknown) =>
    error instanceof ServerError && error.code === "http_error" && error.message === "HTTP 502");
});

test("iteration follows next_cursor; arrays repeat their query parameter; path parameters are escaped", async () => {
  const pages: Record<string, unknown> = {
    "": { data: [{ id: "m1" }, { id: "m2" }], next_cursor: "c1" },
    c1: { data: [{ id: "m3" }], next_cursor: null },
  };
  const { me, seen } = client((request) => json(200, pages[request.url.searchParams.get("cursor") ?? ""]));
  const ids: string[] = [];
  for await (const memory of me.iterMemories({ tags: ["a", "b:*"], limit: 2 })) {
    ids.push(memory.id);
  }
  assert.deepEqual(ids, ["m1", "m2", "m3"]);
  assert.deepEqual(seen.map((r) => r.url.searchParams.getAll("tags")), [["a", "b:*"], ["a", "b:*"]]);
  assert.deepEqual(seen.map((r) => r.url.searchParams.get("limit")), ["2", "2"]);
  assert.equal(seen[1]?.url.searchParams.get("cursor"), "c1");

  const escaped = client(() => json(200, { id: "x" }));
  await escaped.me.getEntry("a/b?c");
  assert.equal(escaped.seen[0]?.url.pathname, "/v1/memory-entries/a%2Fb%3Fc");
});
