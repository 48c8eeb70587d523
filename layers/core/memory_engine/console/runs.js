// Extraction runs.

import { h, $, field, when, api, qs, failed } from "./page.js";
import { provenance } from "./memories.js";

// --- extraction runs ----------------------------------------------------------------------------

export async function runsView(view, parts, params) {
  const memories = (await api("GET", "/v1/memories?limit=100")).data;
  const names = new Map(memories.map((m) => [m.id, m.name]));
  const memory = h("select", { name: "memory_id" }, h("option", { value: "" }, "all memories"),
    memories.map((m) => h("option", { value: m.id }, m.name)));
  const status = h("select", { name: "status" }, ["", "running", "completed", "failed"].map((s) => h("option", { value: s }, s || "any status")));
  const eventId = params.get("event_id") || "";
  const list = h("ol", { class: "list", id: "run-list", "aria-label": "Extraction runs, newest first" });

  async function load() {
    const page = await api("GET", "/v1/extraction-runs" + qs({ memory_id: memory.value, status: status.value, event_id: eventId, limit: 100 }));
    list.replaceChildren(...(page.data.length ? page.data.map((run) => {
      const summary = run.summary || {};
      return h("li", { class: `card run status-${run.status}`, dataset: { runId: run.id, eventId: run.event_id, status: run.status } },
        h("p", { class: "meta" }, h("span", { class: `badge status-${run.status}` }, run.status), " ",
          h("span", { class: "muted" }, when(run.created_at), ` · ${run.attempts} attempt${run.attempts === 1 ? "" : "s"} · `),
          run.memory_id ? h("a", { href: `#/memories/${run.memory_id}` }, names.get(run.memory_id) || run.memory_id) : "deleted memory"),
        h("dl", { class: "counts-grid" }, ["candidates", "created", "updated", "skipped", "superseded"].map((k) =>
          h("div", { dataset: { count: k } }, h("dt", {}, k), h("dd", {}, String(summary[k] ?? "—"))))),
        run.error ? h("p", { class: "error" }, "Error: ", run.error) : null,
        h("p", { class: "provenance" }, "event ", h("code", {}, run.event_id),
          run.conversation_id ? [" · conversation ", h("code", {}, run.conversation_id)] : null,
          run.turn_id ? [" · turn ", h("code", {}, run.turn_id)] : null,
          run.episode_id ? [" · episode ", h("code", {}, run.episode_id)] : null));
    }) : [h("li", { class: "empty" }, "No extraction runs match.")]));
  }
  memory.addEventListener("change", () => load().catch(failed));
  status.addEventListener("change", () => load().catch(failed));
  view.append(h("h2", {}, "Extraction runs"),
    h("div", { class: "row card" }, field("Memory", memory), field("Status", status),
      eventId ? h("p", {}, "Event ", h("code", {}, eventId), " · ", h("a", { href: "#/runs" }, "show all")) : null),
    list);
  await load();
}

