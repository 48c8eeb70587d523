/**
 * The client against the engine's OpenAPI document (docs/openapi.json), as the Python client's
 * tests/client/test_contract.py checks it: the committed generated types are what the document renders
 * to now, every operation of the document is in the client's table (but the ones left out on purpose)
 * with the media types of its bodies, and each comparison really fails when they disagree.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { OPERATIONS, type Operation } from "../src/index.js";
import { PACKAGE_DIR, REPO_ROOT } from "./engine.js";

type Document = { paths: Record<string, Record<string, OperationSpec>> };
type Content = Record<string, unknown>;
interface OperationSpec {
  requestBody?: { content?: Content };
  responses: Record<string, { content?: Content }>;
}

/** Operations the client leaves out on purpose, and why (the Python client's `EXCLUDED`). */
export const EXCLUDED: Record<string, string> = {
  "POST /v1/events": "local-only EventBridge stand-in",
  "PUT /v1/local-uploads/{token}": "local-only S3 stand-in; reached through uploadDocument's URL",
  "GET /v1/local-downloads/{token}": "local-only S3 stand-in; converters GET the download_url the engine sends",
  "POST /v1/converter-callbacks/{token}": "converters POST to the callback_url the engine sends (docs/ingestion.md)",
  "POST /v1/mcp": "MCP clients speak it (the mcp SDK), see docs/mcp.md",
  "GET /v1/openapi.json": "the document itself",
};

function load(): Document {
  return JSON.parse(readFileSync(join(REPO_ROOT, "docs", "openapi.json"), "utf8")) as Document;
}

function nonJson(content: Content | undefined): string[] {
  return Object.keys(content ?? {}).filter((media) => media !== "application/json").sort();
}

/** Every difference between the client's operation table and the document's operations. */
export function compareOperations(document: Document, table: Record<string, Operation> = OPERATIONS): string[] {
  const problems: string[] = [];
  const documented = new Map<string, OperationSpec>();
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, spec] of Object.entries(operations)) {
      documented.set(`${method.toUpperCase()} ${path}`, spec);
    }
  }
  const client = new Map(Object.entries(table).map(([name, op]) => [`${op.method} ${op.path}`, name]));
  const missing = [...documented.keys()].filter((key) => !client.has(key) && !(key in EXCLUDED)).sort();
  const extra = [...client.keys()].filter((key) => !documented.has(key)).sort();
  if (missing.length) {
    problems.push(`operations the client lacks: ${missing.join(", ")}`);
  }
  if (extra.length) {
    problems.push(`client operations the API does not have: ${extra.join(", ")}`);
  }
  for (const [key, name] of client) {
    const spec = documented.get(key);
    const operation = table[name];
    if (!spec || !operation) {
      continue;
    }
    const requestMedia = nonJson(spec.requestBody?.content);
    if (requestMedia.join() !== (operation.requestMedia ?? "")) {
      problems.push(`${name}: request media ${operation.requestMedia} vs ${requestMedia}`);
    }
    const success = Object.entries(spec.responses).filter(([status]) => status.startsWith("2"));
    const responseMedia = [...new Set(success.flatMap(([, response]) => nonJson(response.content)))].sort();
    if (responseMedia.join() !== (operation.responseMedia ?? "")) {
      problems.push(`${name}: response media ${operation.responseMedia} vs ${responseMedia}`);
    }
  }
  return problems;
}

async function render(document: unknown): Promise<string> {
  const url = pathToFileURL(join(PACKAGE_DIR, "scripts", "generate.mjs")).href;
  const generator = (await import(url)) as { render: (document: unknown) => Promise<string> };
  return generator.render(document);
}

test("the committed generated types are what docs/openapi.json renders to (else: make ts-client)", async () => {
  const committed = readFileSync(join(PACKAGE_DIR, "src", "generated", "openapi.ts"), "utf8");
  const fresh = await render(load());
  assert.ok(committed === fresh,
    "clients/typescript/src/generated/openapi.ts is stale: run `make ts-client` and commit the result");
});

test("a change of the document changes the generated types", async () => {
  const document = load() as Document & { components: { schemas: Record<string, { properties: Content }> } };
  const before = await render(document);
  document.components.schemas["Memory"]!.properties["colour"] = { type: "string" };
  const after = await render(document);
  assert.notEqual(before, after);
  assert.match(after, /colour\?: string/);
});

test("the client's operations match the OpenAPI document", () => {
  assert.deepEqual(compareOperations(load()), []);
});

const MUTATIONS: [string, (document: Document) => void, string][] = [
  ["a new route", (d) => { d.paths["/v1/never"] = { post: { responses: {} } }; }, "operations the client lacks: POST /v1/never"],
  ["a route gone", (d) => { delete d.paths["/v1/embeddings"]; }, "client operations the API does not have: POST /v1/embeddings"],
  ["another import media", (d) => {
    d.paths["/v1/memories/import"]!["post"]!.requestBody = { content: { "text/csv": {} } };
  }, "import_memory: request media"],
  ["another export media", (d) => {
    d.paths["/v1/memories/{memory_id}/export"]!["get"]!.responses["200"] = { content: { "text/csv": {} } };
  }, "export_memory: response media"],
];

for (const [what, mutate, expected] of MUTATIONS) {
  test(`a disagreement fails the check: ${what}`, () => {
    const document = load();
    mutate(document);
    const problems = compareOperations(document);
    assert.ok(problems.some((p) => p.includes(expected)), problems.join("\n"));
  });
}
