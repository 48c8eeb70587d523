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

import { compareOperations, load, type Content, type Document } from "./contract.js";
import { PACKAGE_DIR } from "./engine.js";

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
