/**
 * The comparison of the client's operation table with an OpenAPI document (the Python client's
 * tests/client/contract.py, for the operations): which operations exist, and the media type of a body
 * that is not JSON (the JSONL of export and import). The models need no comparison: they are generated
 * from the document, and contract.test.ts fails when the committed ones are stale.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { OPERATIONS, type Operation } from "memory-engine-client";
import { REPO_ROOT } from "./engine.js";

export type Document = { paths: Record<string, Record<string, OperationSpec>> };
export type Content = Record<string, unknown>;
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

export function load(): Document {
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
