// The page's toolkit: DOM helpers, the API with the session's key, sign-out, polling.

export const KEY_SLOT = "memory-engine.api-key";
const POLL_MS = 700;

// --- small DOM helpers ----------------------------------------------------------------------------

export function h(tag, attrs = {}, ...children) {
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

export const $ = (selector, root = document) => root.querySelector(selector);
let idCounter = 0;
export const uid = (prefix) => `${prefix}-${++idCounter}`;

export function field(label, input, help) {
  const id = input.id || uid("f");
  input.id = id;
  const helpEl = help ? h("span", { class: "help", id: `${id}-help` }, help) : null;
  if (helpEl) input.setAttribute("aria-describedby", helpEl.id);
  return h("div", { class: "field" }, h("label", { for: id }, label), input, helpEl);
}

export function when(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}

export function chips(items, cls = "chip") {
  return h("ul", { class: "chips" }, items.map((text) => h("li", { class: cls }, text)));
}

export function splitList(text) {
  return text.split(",").map((s) => s.trim()).filter(Boolean);
}

export function say(message, kind = "info") {
  const status = $("#status");
  status.textContent = message;
  status.dataset.kind = kind;
}

// --- the API ------------------------------------------------------------------------------------

export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && body.error ? body.error : { code: "http_error", message: `HTTP ${status}` };
    super(detail.message);
    this.status = status;
    this.code = detail.code;
    this.details = detail.details;
  }
}

export function currentKey() {
  return sessionStorage.getItem(KEY_SLOT);
}

export async function api(method, path, body, key = currentKey()) {
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

export function qs(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") search.set(k, v);
  const s = search.toString();
  return s ? `?${s}` : "";
}

export function failed(error) {
  say(error instanceof ApiError ? `${error.message} (${error.status} ${error.code})` : String(error), "error");
}


export function signOut(message) {
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

// --- polling (one view polls at a time; routing or signing out stops it) ----------------------------

let polling = null;
export function stopPolling() {
  if (polling) clearInterval(polling);
  polling = null;
}

export function startPolling(poll) {
  stopPolling();
  polling = setInterval(() => poll().catch(failed), POLL_MS);
}
