// memory-engine web console: plain ES module, no build step, no dependencies.
//
// It talks to the same public API as any client, with the key the user types in. The key lives in
// sessionStorage only (gone with the tab); it is sent in the Authorization header of fetch() calls
// and never put in a URL, localStorage or a log. Everything from the API is rendered with
// textContent (never innerHTML), so stored text cannot inject markup; the CSP forbids inline code.

const KEY_SLOT = "memory-engine.api-key";
const POLL_MS = 700;
const SIGNALS = ["vector", "keyword", "entity"];

// --- small DOM helpers ----------------------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const $ = (selector, root = document) => root.querySelector(selector);
let idCounter = 0;
const uid = (prefix) => `${prefix}-${++idCounter}`;

function field(label, input, help) {
  const id = input.id || uid("f");
  input.id = id;
  const helpEl = help ? h("span", { class: "help", id: `${id}-help` }, help) : null;
  if (helpEl) input.setAttribute("aria-describedby", helpEl.id);
  return h("div", { class: "field" }, h("label", { for: id }, label), input, helpEl);
}

function when(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}

function chips(items, cls = "chip") {
  return h("ul", { class: "chips" }, items.map((text) => h("li", { class: cls }, text)));
}

function splitList(text) {
  return text.split(",").map((s) => s.trim()).filter(Boolean);
}

function say(message, kind = "info") {
  const status = $("#status");
  status.textContent = message;
  status.dataset.kind = kind;
}

// --- the API ------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    const detail = body && body.error ? body.error : { code: "http_error", message: `HTTP ${status}` };
    super(detail.message);
    this.status = status;
    this.code = detail.code;
    this.details = detail.details;
  }
}

function currentKey() {
  return sessionStorage.getItem(KEY_SLOT);
}

async function api(method, path, body, key = currentKey()) {
  const headers = { Authorization: `Bearer ${key}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
  });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401 && key === currentKey()) signOut("Your key is no longer accepted: " + error.message);
    throw error;
  }
  return data;
}

function qs(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") search.set(k, v);
  const s = search.toString();
  return s ? `?${s}` : "";
}

function failed(error) {
  say(error instanceof ApiError ? `${error.message} (${error.status} ${error.code})` : String(error), "error");
}

// --- sign in / out ------------------------------------------------------------------------------

async function signIn(event) {
  event.preventDefault();
  const input = $("#api-key");
  const key = input.value.trim();
  const error = $("#login-error");
  error.textContent = "";
  if (!key) {
    error.textContent = "Enter an API key.";
    input.focus();
    return;
  }
  try {
    await api("GET", "/v1/memories?limit=1", undefined, key);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      error.textContent = `This key was not accepted: ${err.message}. Check that you pasted the whole key and that it has not been revoked.`;
    } else if (err instanceof ApiError && err.status === 403) {
      error.textContent = "This key is valid but lacks the read scope the console needs.";
    } else {
      error.textContent = `Could not reach the API: ${err.message}`;
    }
    input.select();
    return;
  }
  input.value = "";
  sessionStorage.setItem(KEY_SLOT, key);
  showApp();
}

function signOut(message) {
  sessionStorage.removeItem(KEY_SLOT);
  stopPolling();
  $("#nav").hidden = true;
  $("#view").hidden = true;
  $("#view").replaceChildren();
  $("#login-view").hidden = false;
  $("#login-error").textContent = message || "";
  say("");
  $("#api-key").focus();
}

function showApp() {
  $("#login-view").hidden = true;
  $("#nav").hidden = false;
  $("#view").hidden = false;
  if (!location.hash || location.hash === "#") location.hash = "#/memories";
  else route();
}

// --- routing (the hash holds the view and ids, never the key) ------------------------------------

let polling = null;
function stopPolling() {
  if (polling) clearInterval(polling);
  polling = null;
}

function route() {
  if (!currentKey()) return;
  stopPolling();
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").filter(Boolean);
  const params = new URLSearchParams(query || "");
  const name = parts[0] || "memories";
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.view === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  say("");
  const view = $("#view");
  view.replaceChildren();
  const render = { memories: memoriesView, documents: documentsView, search: searchView, runs: runsView }[name];
  (render || memoriesView)(view, parts.slice(1), params).catch(failed);
}

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

async function memoriesView(view, parts) {
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

function entityChips(entities) {
  return h("ul", { class: "chips", "aria-label": "Entities" },
    entities.map((e) => h("li", { class: `chip entity role-${e.role}`, title: `${e.role}${e.type ? ", " + e.type : ""}`, dataset: { entity: e.name } },
      e.name, e.type ? h("span", { class: "chip-type" }, ` ${e.type}`) : null)));
}

function validity(entry) {
  if (!entry.valid_from && !entry.valid_to) return null;
  return h("span", { class: "validity" }, "valid ", entry.valid_from ? when(entry.valid_from) : "…", " → ",
    entry.valid_to ? when(entry.valid_to) : "now");
}

function provenance(entry) {
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

// --- documents ----------------------------------------------------------------------------------

const ADVICE = [
  [/encrypt|password/i, "Remove the password (or print it to an unencrypted PDF) and upload it again."],
  [/no text|image-only|scanned|ocr/i, "Add an ingestion rule that routes this content type to an OCR converter, or upload a version with a text layer."],
  [/too large|limit/i, "Split the file into smaller parts and upload them."],
  [/.*/, "Fix the file and upload it again, or re-ingest it with other chunk settings (POST /v1/documents/{id}/ingest)."],
];

function progressBar(label, percent) {
  return h("div", { class: "progress", role: "progressbar", "aria-label": label, "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": percent },
    h("div", { class: "progress-fill", style: null }));
}

function setProgress(bar, percent) {
  bar.setAttribute("aria-valuenow", String(percent));
  bar.setAttribute("aria-valuetext", `${percent} %`);
  bar.firstChild.style.width = `${percent}%`;  // CSSOM, not an inline style attribute: allowed by the CSP
}

function documentRow(doc) {
  const bar = progressBar(`Ingestion progress of ${doc.path}`, 0);
  const detail = h("p", { class: "muted doc-detail" });
  const error = h("div", { class: "doc-error" });
  const badge = h("span", { class: "badge" });
  const row = h("li", { class: "card doc-row", dataset: { documentId: doc.id, path: doc.path } },
    h("h3", {}, doc.title || doc.path), h("p", { class: "muted" }, h("code", {}, doc.path), " · ", doc.content_type || ""),
    h("p", {}, badge, " ", detail), bar, error);
  row.update = (status) => {
    const total = status.total_chunks;
    const percent = status.status === "ready" ? 100 : Math.round(100 * (status.progress || 0));
    setProgress(bar, percent);
    badge.textContent = status.status;
    badge.className = `badge status-${status.status}`;
    row.dataset.status = status.status;
    detail.textContent = `${status.indexed_chunks}/${total ?? "?"} chunks indexed (${percent} %)` + (status.total_pages ? ` · ${status.total_pages} pages` : "");
    error.replaceChildren();
    if (status.status === "failed") {
      const advice = ADVICE.find(([re]) => re.test(status.error || ""))[1];
      error.append(h("p", { class: "error" }, "Failed: ", status.error || "unknown error"), h("p", {}, "What to do: ", advice));
    }
  };
  row.update({ ...doc, progress: doc.total_chunks ? doc.indexed_chunks / doc.total_chunks : 0 });
  return row;
}

async function uploadFile(file, prefix) {
  const path = `${prefix.replace(/\/?$/, "/")}${file.name}`;
  const ticket = await api("POST", "/v1/documents/uploads", { path, content_type: file.type || "application/octet-stream" });
  const response = await fetch(ticket.upload_url, { method: ticket.method, headers: ticket.headers, body: file, credentials: "omit", referrerPolicy: "no-referrer" });
  if (!response.ok) throw new Error(`upload of ${file.name} failed: HTTP ${response.status}`);
  return path.startsWith("/") ? path : `/${path}`;
}

async function documentsView(view) {
  const prefix = h("input", { name: "prefix", value: "/uploads/" });
  const picker = h("input", { type: "file", multiple: true, accept: ".pdf,.txt,.md,application/pdf,text/plain,text/markdown" });
  const zone = h("div", { class: "dropzone", id: "dropzone" },
    h("p", {}, "Drop PDF, text or Markdown files here"),
    field("…or choose files", picker),
    field("Upload under path", prefix, "each file is stored at this prefix plus its name"));
  const list = h("ul", { class: "list", id: "document-list", "aria-label": "Documents" });
  const waiting = new Set();  // uploaded paths the pipeline has not picked up yet
  const rows = new Map();

  async function upload(files) {
    for (const file of files) {
      try {
        say(`Uploading ${file.name}…`);
        waiting.add(await uploadFile(file, prefix.value || "/"));
        say(`Uploaded ${file.name}; ingestion starts in a moment.`);
      } catch (err) { failed(err); }
    }
    refresh().catch(failed);
  }

  async function refresh() {
    const page = await api("GET", "/v1/documents?limit=100");
    for (const doc of page.data) {
      waiting.delete(doc.path);
      if (!rows.has(doc.id)) {
        const row = documentRow(doc);
        rows.set(doc.id, row);
        list.prepend(row);
      } else if (doc.status !== rows.get(doc.id).dataset.status) {
        rows.get(doc.id).update({ ...doc, progress: doc.total_chunks ? doc.indexed_chunks / doc.total_chunks : 0 });
      }
    }
    if (!rows.size) list.replaceChildren(h("li", { class: "empty" }, "No documents yet: drop a file above."));
    else $(".empty", list)?.remove();
  }

  async function poll() {
    const active = [...rows.entries()].filter(([, row]) => ["pending", "processing"].includes(row.dataset.status));
    await Promise.all(active.map(async ([id, row]) => row.update(await api("GET", `/v1/documents/${id}/status`))));
    if (waiting.size) await refresh();
  }

  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    upload([...event.dataTransfer.files]);
  });
  picker.addEventListener("change", () => { upload([...picker.files]); picker.value = ""; });

  view.append(h("h2", {}, "Documents"), zone, list);
  await refresh();
  polling = setInterval(() => poll().catch(failed), POLL_MS);
}

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

async function searchView(view) {
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

// --- extraction runs ----------------------------------------------------------------------------

async function runsView(view, parts, params) {
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

// --- start --------------------------------------------------------------------------------------

$("#login-form").addEventListener("submit", signIn);
$("#sign-out").addEventListener("click", () => signOut("Signed out."));
window.addEventListener("hashchange", () => {
  if (location.hash.startsWith("#entry-")) return;  // an in-page jump, not a view
  route();
});
if (currentKey()) showApp();
else $("#api-key").focus();
