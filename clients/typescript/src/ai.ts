/**
 * Vercel AI SDK tools over a memory-engine client (`memory-engine-client/ai`; needs the `ai` and `zod`
 * packages): `searchMemory` and `writeMemory` recall and record facts of one memory through the agent
 * write path, `searchKnowledge` searches the project's documents. Pass them to `generateText` /
 * `streamText` as `tools`. The model chooses only the query, the limit and what to remember: which memory
 * and which documents the tools reach is fixed when they are made.
 */
import { tool } from "ai";
import { z } from "zod";

import type { MemoryEngineClient } from "./client.js";
import type { DocumentResult, MemoryResult } from "./models.js";

export interface MemoryToolsOptions {
  /** the memory `searchMemory` reads and `writeMemory` writes */
  memoryId: string;
  /** tags every written fact gets (e.g. the user's or the app's) */
  tags?: string[];
  /** the document path prefixes `searchKnowledge` searches (default: all of the project's documents) */
  documentPaths?: string[];
  /** the `agent.model` recorded with each write (provenance) */
  model?: string;
  /** at most this many results a search answers, whatever the model asks (default 10) */
  maxResults?: number;
}

const query = z.string().trim().min(1).max(8000).describe("what to look for, in natural language");

function limitSchema(max: number): z.ZodOptional<z.ZodNumber> {
  return z.number().int().min(1).max(max).optional().describe(`how many results at most (default ${Math.min(5, max)})`);
}

/** A memory search result as a tool answers it (what a model needs, nothing more). */
function fact(result: MemoryResult): Record<string, unknown> {
  return {
    id: result.id, content: result.content, score: result.score, tags: result.tags ?? [],
    valid_from: result.valid_from ?? null, valid_to: result.valid_to ?? null,
  };
}

function passage(result: DocumentResult): Record<string, unknown> {
  return {
    id: result.id, document_id: result.document_id, path: result.path, page: result.page ?? null,
    title: result.title ?? null, content: result.content, score: result.score,
  };
}

/**
 * The three tools, ready for `generateText({ model, tools: memoryTools(client, { memoryId }), ... })`.
 * Engine errors reach the SDK as thrown `APIError`s (a tool error the model sees, or a rejected call).
 */
export function memoryTools(client: MemoryEngineClient, options: MemoryToolsOptions) {
  const maxResults = options.maxResults ?? 10;
  const limit = limitSchema(maxResults);
  return {
    searchMemory: tool({
      description: "Search long-term memory for facts remembered about the user and earlier conversations. "
        + "Use it before answering anything that may depend on what was said or learned before.",
      inputSchema: z.object({ query, limit }),
      execute: async ({ query: text, limit: wanted }) => {
        const count = wanted ?? Math.min(5, maxResults);
        // A query also searches documents (SPEC "Retrieval"): ask for more, keep the memory's facts.
        const found = await client.search(text, { memory_ids: [options.memoryId], limit: Math.min(100, count * 4) });
        const facts = found.results.filter((r): r is MemoryResult => r.source_type === "memory");
        return { results: facts.slice(0, count).map(fact) };
      },
    }),
    writeMemory: tool({
      description: "Remember one durable fact for later conversations: one short self-contained sentence "
        + "(who, what, since when). Similar facts already stored are skipped, merged or superseded.",
      inputSchema: z.object({
        content: z.string().trim().min(1).max(4000).describe("the fact, one self-contained sentence"),
        tags: z.array(z.string().min(1).max(100)).max(10).optional().describe("a few short topic tags"),
      }),
      execute: async ({ content, tags }, { toolCallId }) => {
        const written = await client.writeEntry(options.memoryId, content, {
          source_type: "agent",
          agent: { generation_id: toolCallId, ...(options.model ? { model: options.model } : {}) },
          tags: [...new Set([...(options.tags ?? []), ...(tags ?? [])])],
        });
        return { id: written.id, action: written.action, content: written.content };
      },
    }),
    searchKnowledge: tool({
      description: "Search the knowledge base (ingested documents: manuals, notes, files) for passages "
        + "that answer a question. Each result names its document path and page.",
      inputSchema: z.object({ query, limit }),
      execute: async ({ query: text, limit: wanted }) => {
        const count = wanted ?? Math.min(5, maxResults);
        const found = await client.search(text, {
          limit: count, ...(options.documentPaths ? { document_paths: options.documentPaths } : {}),
        });
        const passages = found.results.filter((r): r is DocumentResult => r.source_type === "document");
        return { results: passages.map(passage) };
      },
    }),
  };
}
