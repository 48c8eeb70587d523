// Documents: uploads (drag and drop, file picker) and ingestion progress.

import { h, $, field, say, api, failed, startPolling } from "./page.js";

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

export async function documentsView(view) {
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
  startPolling(poll);
}

