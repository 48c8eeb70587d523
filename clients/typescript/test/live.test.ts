/**
 * The client against the live local engine `run.ts` started (embedded PostgreSQL, the offline model, the
 * HTTP gateway): every kind of operation, async cursor iteration, typed errors, export/import, and the
 * OpenAPI document the engine serves checked against the client's table.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AuthenticationError, MemoryEngineClient, NotFoundError, UnprocessableEntityError, type DocumentResult, type Memory,
  type EpisodeSearchResult, type MemoryResult,
} from "memory-engine-client";
import { compareOperations } from "./contract.js";
import { liveClient, unique } from "./support.js";

const me = liveClient();

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) {
    out.push(item);
  }
  return out;
}

test("the served OpenAPI document matches the client", async () => {
  const response = await fetch(`${me.baseUrl}/v1/openapi.json`);
  assert.equal(response.status, 200);
  assert.deepEqual(compareOperations(await response.json()), []);
});

test("memories and entries: every operation, and pagination", async () => {
  assert.equal((await me.health()).status, "ok");
  const tag = unique("ts");
  const created: Memory[] = [];
  for (let i = 0; i < 5; i++) {
    created.push(await me.createMemory(`m${i}`, { tags: [tag, `n:${i}`], description: "d" }));
  }
  const page = await me.listMemories({ tags: [tag], limit: 2 });
  assert.equal(page.data.length, 2);
  assert.ok(page.next_cursor);
  const all = await collect(me.iterMemories({ tags: [tag], limit: 2 }));
  assert.deepEqual(all.map((m) => m.id), created.map((m) => m.id).reverse());
  const memory = await me.updateMemory(created[0]!.id, { description: "updated" });
  assert.equal((await me.getMemory(memory.id)).description, "updated");

  const first = await me.writeEntry(memory.id, "Alice's manager is Bob.", { entities: [{ name: "Alice", type: "person" }] });
  assert.equal(first.action, "created");
  assert.equal((await me.writeEntry(memory.id, "Alice's manager is Bob.")).action, "skipped");
  const agent = await me.writeEntry(memory.id, "Alice likes green tea.", { source_type: "agent", agent: { generation_id: "g1" } });
  assert.equal(agent.action, "created");
  assert.equal(agent.source_generation_id, "g1");
  for (let i = 0; i < 3; i++) {
    await me.writeEntry(memory.id, `Fact number ${i} about the weather in town ${i}.`);
  }
  assert.equal((await me.listEntries({ memory_id: memory.id, limit: 2 })).data.length, 2);
  const entries = await collect(me.iterEntries({ memory_id: memory.id, limit: 2 }));
  assert.equal(entries.length, 5);
  assert.equal(new Set(entries.map((e) => e.id)).size, 5);
  assert.equal((await me.getEntry(first.id)).content, "Alice's manager is Bob.");
  assert.deepEqual((await me.replaceEntry(first.id, { tags: ["work"] })).tags, ["work"]);

  const found = await me.search("Who is Alice's manager?", { memory_ids: [memory.id], render: true, limit: 3 });
  const top = found.results[0] as MemoryResult;
  assert.equal(top.source_type, "memory");
  assert.equal(top.id, first.id);
  assert.ok(found.context?.includes("Alice's manager is Bob."));

  await me.deleteEntry(first.id);
  await assert.rejects(me.getEntry(first.id), (error: unknown) =>
    error instanceof NotFoundError && error.status === 404 && error.code === "not_found");
  assert.equal(await me.deleteMemory(created[4]!.id), null);
  assert.ok(!(await collect(me.iterMemories({ tags: [tag] }))).some((m) => m.id === created[4]!.id));
});

test("batch writes and deletes, forget, export and import", async () => {
  const memory = await me.createMemory(unique("batch"), { default_ttl: 3600 });
  const result = await me.writeEntries([
    { memory_id: memory.id, content: "Dana works at the harbour office.", source_conversation_id: "conv-ts" },
    { memory_id: memory.id, content: "Dana's badge number is 4471." },
    { memory_id: memory.id, content: "x", confidence: 2 },
  ]);
  assert.deepEqual(result.results.map((r) => r.action), ["created", "created", "rejected"]);
  const again = await me.writeEntries([{ memory_id: memory.id, content: "Dana's badge number is 4471." }]);
  assert.deepEqual([again.created, again.skipped], [0, 1]);

  const lines = await collect(me.exportMemory(memory.id, { vectors: false }));
  assert.equal(lines[0]?.["type"], "header");
  assert.equal(lines.filter((line) => line["type"] === "entry").length, 2);
  const imported = await me.importMemory(lines);
  assert.notEqual(imported.memory.id, memory.id);
  const copies = await collect(me.iterEntries({ memory_id: imported.memory.id }));
  assert.deepEqual(copies.map((e) => e.content).sort(), ["Dana works at the harbour office.", "Dana's badge number is 4471."]);

  const forgotten = await me.forget({ conversation_id: "conv-ts", memory_id: memory.id });
  assert.equal(forgotten.deleted.entries, 1);
  assert.equal((await me.forget({ conversation_id: "conv-ts", memory_id: memory.id })).deleted.entries, 0);
  const second = result.results[1]?.entry?.id ?? "";
  const deleted = await me.deleteEntries([second, "ent_missing"]);
  assert.deepEqual(deleted.results.map((d) => d.action), ["deleted", "not_found"]);
  assert.deepEqual((await me.listEntries({ memory_id: memory.id })).data, []);

  const purged = await me.deleteMemory(imported.memory.id, { purge: true });
  assert.equal(purged.deleted.entries, 2);
  await assert.rejects(me.deleteMemory(imported.memory.id), NotFoundError);
  assert.deepEqual((await me.listExtractionRuns({ memory_id: memory.id })).data, []);
  assert.deepEqual(await collect(me.iterExtractionRuns({ memory_id: memory.id })), []);
});

test("documents, ingestion rules and embeddings", async () => {
  const prefix = `/${unique("ts-docs")}/`;
  const doc = await me.createDocument(`${prefix}leave.md`, "# Leave\n\nEmployees get 25 days of paid leave.", { wait: true });
  assert.equal(doc.status, "ready");
  const batch = await me.createDocuments([{ path: `${prefix}a.md`, content: "alpha" }, { path: "", content: "x" }]);
  assert.deepEqual([batch.created, batch.rejected], [1, 1]);
  const upload = await me.uploadDocument(`${prefix}uploaded.md`, "# Uploaded\n\nvia the upload URL", { content_type: "text/markdown" });
  assert.equal(upload.method, "PUT");
  assert.ok((await me.listDocuments({ path_prefix: prefix, limit: 1 })).next_cursor);
  const paths = new Set((await collect(me.iterDocuments({ path_prefix: prefix, limit: 1 }))).map((d) => d.path));
  assert.ok(paths.has(`${prefix}leave.md`) && paths.has(`${prefix}a.md`));
  assert.equal((await me.getDocument(doc.id)).path, `${prefix}leave.md`);
  assert.equal((await me.documentStatus(doc.id)).status, "ready");
  const again = await me.reingestDocument(doc.id, { chunk_strategy: "size", chunk_size: 200, chunk_overlap: 0, wait: true });
  assert.equal(again.chunk_strategy, "size");
  const hits = (await me.search("paid leave", { document_paths: [prefix], limit: 1 })).results;
  assert.equal((hits[0] as DocumentResult).path, `${prefix}leave.md`);
  await me.deleteDocument(doc.id);
  await assert.rejects(me.documentStatus(doc.id), NotFoundError);

  const rule = await me.createIngestionRule({ content_type_glob: "image/x-ts-test", converter: { type: "ocr" } });
  assert.equal((await me.getIngestionRule(rule.id)).content_type_glob, "image/x-ts-test");
  const replaced = await me.replaceIngestionRule(rule.id, { content_type_glob: "image/x-ts-test2", converter: { type: "ocr" } });
  assert.equal(replaced.content_type_glob, "image/x-ts-test2");
  assert.ok((await me.listIngestionRules()).data.some((r) => r.id === rule.id));
  await me.deleteIngestionRule(rule.id);
  await assert.rejects(me.getIngestionRule(rule.id), NotFoundError);

  const one = await me.embed("hello");
  const many = await me.embed(["a", "b"]);
  assert.equal(one.dimensions, 384);
  assert.equal(one.data[0]?.embedding.length, 384);
  assert.equal(many.data.length, 2);
});

test("typed errors from the engine", async () => {
  const wrong = new MemoryEngineClient({ baseUrl: me.baseUrl, apiKey: "me_wrong" });
  await assert.rejects(wrong.listMemories(), (error: unknown) =>
    error instanceof AuthenticationError && error.status === 401 && error.code === "unauthorized");
  const memory = await me.createMemory(unique("errors"));
  await assert.rejects(me.writeEntry(memory.id, "x", { confidence: 2 }), (error: unknown) => {
    assert.ok(error instanceof UnprocessableEntityError);
    assert.equal(error.code, "validation_error");
    assert.equal((error.details as { field: string }[])[0]?.field, "confidence");
    return true;
  });
  await assert.rejects(me.getMemory("mem_missing"), NotFoundError);
});

test("conversation turns: recorded in order, idempotent by turn_id, listed and deleted", async () => {
  const memory = await me.createMemory(unique("turns"));
  const conversation = unique("conv");
  const recorded = await me.recordTurns(memory.id, conversation, [
    { role: "user", content: "My flight to Lisbon leaves on Friday." },
    { role: "assistant", content: "Noted: Lisbon on Friday.", turn_id: "t-2" },
  ]);
  assert.equal(recorded.turns.length, 2);
  assert.ok(recorded.turns.every((t) => t.created));
  // the client gave the first turn an id, so sending the same turns again stores nothing new
  const again = await me.recordTurns(memory.id, conversation, [
    { role: "assistant", content: "Noted: Lisbon on Friday.", turn_id: "t-2" },
  ]);
  assert.equal(again.turns[0]!.created, false);
  // with include: ["episodes"] the turns join the fused ranking, typed by their source_type
  const found = await me.search("When does my flight to Lisbon leave?", {
    memory_ids: [memory.id], include: ["episodes"], min_score: 0,
  });
  const episodes = found.results.filter((r): r is EpisodeSearchResult => r.source_type === "episode");
  assert.ok(episodes.some((e) => e.conversation_id === conversation && e.content.includes("Lisbon")));
  const turns = await collect(me.iterTurns(memory.id, { conversation_id: conversation, limit: 1 }));
  assert.deepEqual(turns.map((t) => t.content), ["My flight to Lisbon leaves on Friday.", "Noted: Lisbon on Friday."]);
  await me.deleteTurn(memory.id, "t-2", { conversationId: conversation });
  assert.equal((await me.listTurns(memory.id, { conversation_id: conversation })).data.length, 1);
  await me.deleteConversationTurns(memory.id, conversation);
  assert.equal((await me.listTurns(memory.id, { conversation_id: conversation })).data.length, 0);
  await assert.rejects(me.deleteTurn(memory.id, "t-2"), NotFoundError);
});
