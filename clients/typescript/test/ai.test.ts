/**
 * The Vercel AI SDK tools driven by the SDK itself: `generateText` and `streamText` with a scripted
 * language model from `ai/test` that calls the tools, so the live engine really receives the write and
 * the searches, and what it answers comes back to the model as tool results.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { generateText, stepCountIs, streamText } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";

import { NotFoundError } from "memory-engine-client";
import { memoryTools } from "memory-engine-client/ai";
import { liveClient, unique } from "./support.js";

const me = liveClient();
const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

type Prompt = { role: string; content: unknown }[];
type ToolResultPart = { type: string; toolName: string; output: { type: string; value: unknown } };

/** The tool results the SDK sent back to the model so far, by tool name. */
function toolResults(prompt: Prompt): Map<string, unknown> {
  const results = new Map<string, unknown>();
  for (const message of prompt) {
    if (message.role === "tool" && Array.isArray(message.content)) {
      for (const part of message.content as ToolResultPart[]) {
        if (part.type === "tool-result") {
          results.set(part.toolName, part.output.value);
        }
      }
    }
  }
  return results;
}

function call(id: string, toolName: string, input: unknown) {
  return {
    content: [{ type: "tool-call" as const, toolCallId: id, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" }, usage: USAGE, warnings: [],
  };
}

function say(text: string) {
  return { content: [{ type: "text" as const, text }], finishReason: { unified: "stop" as const, raw: "stop" }, usage: USAGE, warnings: [] };
}

type StreamPart = Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer P> ? P : never;
type Found = { results: { content: string; path?: string }[] };

test("generateText: the model writes a fact, recalls it and searches the documents through the engine", async () => {
  const memory = await me.createMemory(unique("ai-user"));
  const prefix = `/${unique("ai-handbook")}/`;
  await me.createDocument(`${prefix}leave.md`, "# Leave\n\nEmployees get 25 days of paid leave a year.", { wait: true });
  // the model: write, recall, look up, then answer from what the tools gave back
  const model = new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const seen = toolResults(prompt as Prompt);
      if (!seen.has("writeMemory")) {
        return call("call-write", "writeMemory", { content: "The user moved to Lisbon in 2024.", tags: ["home"] });
      }
      if (!seen.has("searchMemory")) {
        return call("call-recall", "searchMemory", { query: "Where does the user live?" });
      }
      if (!seen.has("searchKnowledge")) {
        return call("call-docs", "searchKnowledge", { query: "How many days of paid leave?", limit: 1 });
      }
      const fact = (seen.get("searchMemory") as Found).results[0]?.content;
      const passage = (seen.get("searchKnowledge") as Found).results[0]?.path;
      return say(`${fact} (leave: ${passage})`);
    },
  });
  const result = await generateText({
    model,
    tools: memoryTools(me, { memoryId: memory.id, tags: ["chat"], documentPaths: [prefix], model: "mock" }),
    stopWhen: stepCountIs(5),
    prompt: "I moved to Lisbon last year. Where do I live, and how much leave do I get?",
  });

  // the engine received the write, through the agent path, with the tool call as its generation
  const entries = (await me.listEntries({ memory_id: memory.id })).data;
  assert.equal(entries.length, 1);
  assert.equal(entries[0]?.content, "The user moved to Lisbon in 2024.");
  assert.equal(entries[0]?.source_type, "agent");
  assert.equal(entries[0]?.source_generation_id, "call-write");
  assert.deepEqual([...(entries[0]?.tags ?? [])].sort(), ["chat", "home"]);
  // and its searches answered the model: the fact from the memory, the passage from the documents
  const results = result.steps.flatMap((step) => step.toolResults);
  assert.deepEqual(results.map((r) => r.toolName), ["writeMemory", "searchMemory", "searchKnowledge"]);
  assert.deepEqual(results[0]?.output, { id: entries[0]?.id, action: "created", content: "The user moved to Lisbon in 2024." });
  const recalled = results[1]?.output as Found & { results: { id: string }[] };
  assert.equal(recalled.results[0]?.id, entries[0]?.id);
  assert.ok(recalled.results.every((r) => !("path" in r)), "searchMemory answers facts only");
  assert.equal((results[2]?.output as Found).results[0]?.path, `${prefix}leave.md`);
  assert.equal(result.text, `The user moved to Lisbon in 2024. (leave: ${prefix}leave.md)`);
  assert.equal(model.doGenerateCalls.length, 4);
});

test("streamText: a recall streamed through the SDK", async () => {
  const memory = await me.createMemory(unique("ai-stream"));
  await me.writeEntry(memory.id, "The user's favourite tea is sencha.");
  let step = 0;
  const model = new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      step += 1;
      const found = toolResults(prompt as Prompt).get("searchMemory") as Found | undefined;
      const parts: StreamPart[] = found
        ? [{ type: "text-start" as const, id: "t" }, { type: "text-delta" as const, id: "t", delta: found.results[0]?.content ?? "nothing" },
          { type: "text-end" as const, id: "t" }, { type: "finish" as const, finishReason: { unified: "stop" as const, raw: "stop" }, usage: USAGE }]
        : [{ type: "tool-call" as const, toolCallId: `s${step}`, toolName: "searchMemory", input: JSON.stringify({ query: "favourite tea" }) },
          { type: "finish" as const, finishReason: { unified: "tool-calls" as const, raw: "tool_calls" }, usage: USAGE }];
      return { stream: convertArrayToReadableStream(parts) };
    },
  });
  const result = streamText({ model, tools: memoryTools(me, { memoryId: memory.id }), stopWhen: stepCountIs(3), prompt: "Which tea do I like?" });
  let text = "";
  for await (const delta of result.textStream) {
    text += delta;
  }
  assert.equal(text, "The user's favourite tea is sencha.");
});

test("an engine error reaches the SDK as the tool's error, typed", async () => {
  const model = new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => (!(prompt as Prompt).some((m) => m.role === "tool")
      ? call("call-bad", "writeMemory", { content: "A fact for a memory that is not there." })
      : say("done")),
  });
  const result = await generateText({
    model, tools: memoryTools(me, { memoryId: "mem_missing" }), stopWhen: stepCountIs(3), prompt: "remember this",
  });
  const errors = result.steps.flatMap((s) => s.content).filter((part) => part.type === "tool-error");
  assert.equal(errors.length, 1);
  const error = (errors[0] as { error: unknown }).error;
  assert.ok(error instanceof NotFoundError, String(error));
  assert.equal(result.text, "done");
});
