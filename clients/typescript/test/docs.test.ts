/**
 * The example of docs/integrations.md "## TypeScript and the Vercel AI SDK" runs as a user pastes it,
 * importing the package by its name, against the live engine; a scripted `ai/test` model stands in for
 * the `model` it leaves to the reader (it writes the fact, recalls it, and answers what the recall found).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { PACKAGE_DIR, REPO_ROOT } from "./engine.js";
import { liveClient } from "./support.js";

const SECTION = "## TypeScript and the Vercel AI SDK";

/** The first ```ts block of the section. */
export function example(markdown: string): string {
  const start = markdown.indexOf(SECTION);
  assert.ok(start >= 0, `docs/integrations.md has no "${SECTION}"`);
  const next = markdown.indexOf("\n## ", start + SECTION.length);
  const section = markdown.slice(start, next < 0 ? undefined : next);
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(block?.[1], "the section has no ```ts example");
  return block[1];
}

const MODEL = `import { MockLanguageModelV3 } from "ai/test";
const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };
const results = (prompt) => prompt.filter((m) => m.role === "tool").flatMap((m) => m.content);
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const done = results(prompt);
    const call = (toolName, input) => ({ content: [{ type: "tool-call", toolCallId: "c" + done.length, toolName,
      input: JSON.stringify(input) }], finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] });
    if (done.length === 0) return call("writeMemory", { content: "The user lives in Lisbon." });
    if (done.length === 1) return call("searchMemory", { query: "Where does the user live?" });
    const found = done[1].output.value.results;
    return { content: [{ type: "text", text: "recalled: " + found.map((r) => r.content).join("; ") }],
      finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
  },
});
`;

test("the example of docs/integrations.md runs against the engine", async () => {
  const code = example(readFileSync(join(REPO_ROOT, "docs", "integrations.md"), "utf8"));
  const dir = join(PACKAGE_DIR, "build", "docs");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "integrations-example.mjs");
  writeFileSync(file, MODEL + code);
  const me = liveClient();
  const { stdout } = await promisify(execFile)(process.execPath, [file], {
    cwd: dir,
    env: { ...process.env, MEMORY_ENGINE_URL: me.baseUrl, MEMORY_ENGINE_API_KEY: process.env["MEMORY_ENGINE_TEST_KEY"] },
  });
  assert.equal(stdout.trim(), "recalled: The user lives in Lisbon.");
  const memories = [];
  for await (const memory of me.iterMemories()) {
    if (memory.name === "user-42") {
      memories.push(memory);
    }
  }
  assert.equal(memories.length, 1);
  const entries = (await me.listEntries({ memory_id: memories[0]!.id })).data;
  assert.deepEqual(entries.map((e) => [e.content, e.source_type, e.tags]), [["The user lives in Lisbon.", "agent", ["user:42"]]]);
});
