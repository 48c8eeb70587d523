// The search bench: per-signal ranks, the <knowledge> block, preset comparison.

import { h, $, field, splitList, say, api, failed } from "./page.js";
import { entityChips, validity } from "./memories.js";

const SIGNALS = ["vector", "keyword", "entity"];

// --- search bench -------------------------------------------------------------------------------

function rankBars(result, depth) {
  return h("dl", { class: "ranks", "aria-label": "Rank of this result in each signal" },
    SIGNALS.map((signal) => {
      const rank = result.signal_ranks ? result.signal_ranks[signal] : undefined;
      const width = rank ? Math.max(6, Math.round(100 * (1 - (rank - 1) / depth))) : 0;
      const bar = h("span", { class: "rank-bar" }, h("span", { class: `rank-fill sig-${signal}` }));
      bar.firstChild.style.width = `${width}%`;
      return h("div", { class: "rank", dataset: { signal, rank: rank ?? "" } },
        h("dt", {}, signal), h("dd", {}, bar, h("span", { class: "rank-label" }, rank ? `#${rank}` : "—")));
    }));
}

function resultCard(result, index, depth) {
  const isMemory = result.source_type === "memory";
  return h("li", { class: "card result", dataset: { resultId: result.id, source: result.source_type } },
    h("p", { class: "meta" }, h("span", { class: "rank-no" }, `#${index + 1}`), " ",
      h("span", { class: `badge ${isMemory ? "badge-green" : ""}` }, result.source_type), " ",
      isMemory ? h("span", {}, result.memory_name) : h("code", {}, `${result.path}${result.page ? ` (page ${result.page})` : ""}`)),
    h("p", { class: "content" }, result.content),
    h("p", { class: "scores" },
      h("span", { class: "score" }, "fused ", h("strong", { class: "fused" }, result.score.toFixed(4))), " · ",
      h("span", { class: "score" }, "similarity ", h("strong", { class: "similarity" }, result.similarity_score == null ? "—" : result.similarity_score.toFixed(4)))),
    rankBars(result, depth),
    isMemory && result.entities.length ? entityChips(result.entities) : null,
    isMemory ? validity(result) : null);
}

export async function searchView(view) {
  const memoryPage = await api("GET", "/v1/memories?limit=100");
  const query = h("input", { name: "query", type: "search", required: true });
  const memoryBoxes = memoryPage.data.map((m) => h("label", { class: "inline" },
    h("input", { type: "checkbox", name: "memory", value: m.id, checked: true }), ` ${m.name}`));
  const tagGlobs = h("input", { name: "memory_tags" });
  const paths = h("input", { name: "document_paths" });
  const limit = h("input", { name: "limit", type: "number", min: 1, max: 100, value: 10 });
  const render = h("input", { type: "checkbox", name: "render", checked: true });
  const compare = h("input", { type: "checkbox", name: "compare" });
  const form = h("form", { class: "card form-grid search-form", "aria-labelledby": "search-title" },
    h("h3", { id: "search-title" }, "Query"),
    field("Query", query),
    h("fieldset", {}, h("legend", {}, "Memories to search"),
      memoryBoxes.length ? memoryBoxes : h("p", { class: "muted" }, "No memories in this project.")),
    field("Memory tags", tagGlobs, "globs, comma-separated (entry granularity)"),
    field("Document paths", paths, "prefixes, comma-separated; empty searches every document"),
    h("div", { class: "row" }, field("Results", limit),
      h("label", { class: "inline" }, render, " Render the <knowledge> block"),
      h("label", { class: "inline" }, compare, " Compare hybrid and vector_only side by side")),
    h("button", { type: "submit" }, "Search"));
  const out = h("div", { id: "search-results", "aria-live": "polite" });

  async function run(preset, body) {
    const started = performance.now();
    const response = await api("POST", "/v1/knowledge/search", { ...body, preset });
    return { preset, response, ms: Math.round(performance.now() - started) };
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const memoryIds = memoryBoxes.map((l) => l.firstChild).filter((b) => b.checked).map((b) => b.value);
    const body = { query: query.value, limit: Number(limit.value) || 10, render: render.checked };
    if (memoryIds.length) body.memory_ids = memoryIds;
    if (splitList(tagGlobs.value).length) body.memory_tags = splitList(tagGlobs.value);
    if (splitList(paths.value).length) body.document_paths = splitList(paths.value);
    try {
      const runs = await Promise.all((compare.checked ? ["hybrid", "vector_only"] : ["hybrid"]).map((p) => run(p, body)));
      const depth = Math.max(30, body.limit * 3);
      out.replaceChildren(h("div", { class: `columns${runs.length > 1 ? " two" : ""}` }, runs.map(({ preset, response, ms }) =>
        h("section", { class: "preset", dataset: { preset }, "aria-label": `${preset} results` },
          h("h3", {}, preset, h("span", { class: "muted" }, ` · ${response.results.length} results · ${ms} ms`)),
          response.degraded ? h("p", { class: "error" }, `Degraded: ${response.degraded.join(", ")}`) : null,
          h("ol", { class: "list results" }, response.results.map((r, i) => resultCard(r, i, depth))),
          response.context !== undefined && response.context !== null
            ? h("details", { class: "context", open: true }, h("summary", {}, "Rendered <knowledge> block"),
              h("pre", { class: "knowledge" }, response.context || "(empty: nothing matched)"))
            : null))));
      say(`Search done: ${runs.map((r) => `${r.preset} ${r.response.results.length}`).join(", ")} results.`);
    } catch (err) { failed(err); }
  });
  view.append(h("h2", {}, "Search bench"), form, out);
}

