// Memories: the list, one memory's entries with their history and provenance.

import { h, $, field, when, chips, splitList, say, api, qs, failed } from "./page.js";

// --- memories -----------------------------------------------------------------------------------

async function entriesOf(memoryId, includeInvalidated = true) {
  const out = [];
  let cursor = null;
  do {
    const page = await api("GET", "/v1/memory-entries" + qs({ memory_id: memoryId, include_invalidated: includeInvalidated, limit: 100, cursor }));
    out.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor && out.length < 1000);
  return out;
}

export async function memoriesView(view, parts) {
  if (parts[0]) return memoryDetail(view, parts[0]);
  const name = h("input", { name: "name", required: true, maxlength: 200 });
  const description = h("input", { name: "description", maxlength: 2000 });
  const tags = h("input", { name: "tags" });
  const form = h("form", { class: "card form-grid", "aria-labelledby": "new-memory-title" },
    h("h3", { id: "new-memory-title" }, "New memory"),
    field("Name", name), field("Description", description), field("Tags", tags, "comma-separated"),
    h("button", { type: "submit" }, "Create memory"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const memory = await api("POST", "/v1/memories", {
        name: name.value.trim(), description: description.value.trim() || null, tags: splitList(tags.value),
      });
      say(`Memory “${memory.name}” created.`);
      location.hash = `#/memories/${memory.id}`;
    } catch (err) { failed(err); }
  });
  const list = h("ul", { class: "list", id: "memory-list", "aria-label": "Memories" });
  view.append(h("h2", {}, "Memories"), h("div", { class: "split" }, h("div", {}, list), form));
  const page = await api("GET", "/v1/memories?limit=100");
  if (!page.data.length) list.append(h("li", { class: "empty" }, "No memories yet: create one."));
  for (const memory of page.data) {
    const counts = h("span", { class: "muted counts" }, "counting…");
    list.append(h("li", { class: "card memory-row", dataset: { memoryId: memory.id } },
      h("h3", {}, h("a", { href: `#/memories/${memory.id}` }, memory.name)),
      memory.description ? h("p", {}, memory.description) : null,
      chips(memory.tags, "chip tag"), counts));
    entriesOf(memory.id).then((entries) => {
      const live = entries.filter((e) => !e.invalidated_at).length;
      counts.textContent = `${live} live ${live === 1 ? "entry" : "entries"}, ${entries.length - live} superseded`;
    }).catch(() => { counts.textContent = ""; });
  }
}

export function entityChips(entities) {
  return h("ul", { class: "chips", "aria-label": "Entities" },
    entities.map((e) => h("li", { class: `chip entity role-${e.role}`, title: `${e.role}${e.type ? ", " + e.type : ""}`, dataset: { entity: e.name } },
      e.name, e.type ? h("span", { class: "chip-type" }, ` ${e.type}`) : null)));
}

export function validity(entry) {
  if (!entry.valid_from && !entry.valid_to) return null;
  return h("span", { class: "validity" }, "valid ", entry.valid_from ? when(entry.valid_from) : "…", " → ",
    entry.valid_to ? when(entry.valid_to) : "now");
}

export function provenance(entry) {
  const bits = [];
  if (entry.source_conversation_id) bits.push(["conversation", entry.source_conversation_id]);
  if (entry.source_generation_id) bits.push(["turn", entry.source_generation_id]);
  if (!bits.length && !entry.source_event_id) return null;
  return h("p", { class: "provenance" }, "from ",
    bits.map(([label, value]) => h("span", {}, `${label} `, h("code", {}, value), " ")),
    entry.source_event_id
      ? h("a", { href: `#/runs?event_id=${encodeURIComponent(entry.source_event_id)}` }, "event ", h("code", {}, entry.source_event_id), " (run and episode)")
      : null);
}

function entryItem(entry, replaced) {
  const superseded = Boolean(entry.invalidated_at);
  const item = h("li", {
    class: `card entry${superseded ? " superseded" : ""}`, id: `entry-${entry.id}`, tabindex: "-1",
    dataset: { entryId: entry.id, state: superseded ? "superseded" : "live" },
  },
  h("p", { class: "content" }, entry.content),
  h("p", { class: "meta" },
    h("span", { class: `badge ${superseded ? "badge-grey" : "badge-green"}` }, superseded ? "superseded" : "live"), " ",
    h("span", { class: "badge" }, entry.source_type), " ",
    h("span", { class: "muted" }, `confidence ${entry.confidence.toFixed(2)} · written ${when(entry.created_at)}`,
      entry.updated_at !== entry.created_at ? ` · updated ${when(entry.updated_at)}` : ""), " ", validity(entry)),
  entry.entities.length ? entityChips(entry.entities) : null,
  entry.tags.length ? chips(entry.tags, "chip tag") : null,
  provenance(entry));
  if (superseded) {
    item.append(h("p", { class: "history" }, "Superseded ", when(entry.invalidated_at),
      entry.superseded_by_entry_id ? [" by ", h("a", { href: `#entry-${entry.superseded_by_entry_id}`, class: "jump", dataset: { target: entry.superseded_by_entry_id } }, entry.superseded_by_entry_id)] : null,
      entry.invalidation_reason ? [" — reason: ", h("span", { class: "reason" }, entry.invalidation_reason)] : null));
  }
  if (replaced.length) {
    item.append(h("p", { class: "history" }, "Replaces ",
      replaced.map((old, i) => [i ? ", " : "", h("a", { href: `#entry-${old.id}`, class: "jump", dataset: { target: old.id } }, old.id)])));
  }
  return item;
}

async function memoryDetail(view, memoryId) {
  const memory = await api("GET", `/v1/memories/${encodeURIComponent(memoryId)}`);
  const content = h("textarea", { name: "content", required: true, rows: 2 });
  const entities = h("input", { name: "entities" });
  const tags = h("input", { name: "tags" });
  const validFrom = h("input", { name: "valid_from", type: "date" });
  const validTo = h("input", { name: "valid_to", type: "date" });
  const form = h("form", { class: "card form-grid", "aria-labelledby": "new-entry-title" },
    h("h3", { id: "new-entry-title" }, "Add an entry"),
    field("Fact", content, "one atomic fact"),
    field("Entities", entities, "comma-separated, name or name:type (e.g. Ada:person)"),
    field("Tags", tags, "comma-separated"),
    h("div", { class: "row" }, field("Valid from", validFrom), field("Valid to", validTo)),
    h("button", { type: "submit" }, "Add entry"));
  const history = h("input", { type: "checkbox", id: "show-history", checked: true });
  const list = h("ol", { class: "list", id: "entry-list", "aria-label": "Entries, newest first" });

  async function load() {
    const entries = await entriesOf(memory.id, history.checked);
    const replacedBy = new Map();
    for (const e of entries) {
      if (e.superseded_by_entry_id) replacedBy.set(e.superseded_by_entry_id, [...(replacedBy.get(e.superseded_by_entry_id) || []), e]);
    }
    list.replaceChildren(...(entries.length ? entries.map((e) => entryItem(e, replacedBy.get(e.id) || []))
      : [h("li", { class: "empty" }, "No entries yet.")]));
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      memory_id: memory.id, content: content.value.trim(), tags: splitList(tags.value),
      entities: splitList(entities.value).map((s) => { const [n, t] = s.split(":"); return t ? { name: n.trim(), type: t.trim() } : { name: n.trim() }; }),
    };
    if (validFrom.value) body.valid_from = `${validFrom.value}T00:00:00Z`;
    if (validTo.value) body.valid_to = `${validTo.value}T00:00:00Z`;
    try {
      const written = await api("POST", "/v1/memory-entries", body);
      say(`Entry ${written.action}: ${written.id}`);
      form.reset();
      await load();
      content.focus();
    } catch (err) { failed(err); }
  });
  history.addEventListener("change", () => load().catch(failed));
  list.addEventListener("click", (event) => {
    const link = event.target.closest("a.jump");
    if (!link) return;
    event.preventDefault();  // keep the view's hash; move focus to the entry instead
    const target = document.getElementById(`entry-${link.dataset.target}`);
    if (target) { target.classList.add("flash"); target.focus(); setTimeout(() => target.classList.remove("flash"), 1500); }
  });

  view.append(
    h("p", {}, h("a", { href: "#/memories" }, "← All memories")),
    // a memory without a description gets a muted note: never `null` (Element.append, unlike h(),
    // would render a null argument as the text "null")
    h("h2", {}, memory.name),
    memory.description ? h("p", {}, memory.description) : h("p", { class: "muted no-description" }, "No description"),
    chips(memory.tags, "chip tag"),
    h("p", { class: "muted" }, "Id ", h("code", {}, memory.id), " · created ", when(memory.created_at)),
    h("div", { class: "split" },
      h("div", {}, h("h3", {}, "Entries"),
        h("p", {}, h("label", { class: "inline" }, history, " Show history (superseded entries, greyed)")), list),
      form));
  await load();
}

