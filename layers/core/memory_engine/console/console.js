// memory-engine web console: plain ES module, no build step, no dependencies.
//
// It talks to the same public API as any client, with the key the user types in. The key lives in
// sessionStorage only (gone with the tab); it is sent in the Authorization header of fetch() calls
// and never put in a URL, localStorage or a log. Everything from the API is rendered with
// textContent (never innerHTML), so stored text cannot inject markup; the CSP forbids inline code.

//
// This file signs in and routes; each view lives in its own module.

import { $, say, ApiError, KEY_SLOT, currentKey, api, failed, signOut, stopPolling } from "./page.js";
import { memoriesView } from "./memories.js";
import { documentsView } from "./documents.js";
import { searchView } from "./search.js";
import { runsView } from "./runs.js";

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


function showApp() {
  $("#login-view").hidden = true;
  $("#nav").hidden = false;
  $("#view").hidden = false;
  if (!location.hash || location.hash === "#") location.hash = "#/memories";
  else route();
}


// --- routing (the hash holds the view and ids, never the key) ------------------------------------

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

// --- start --------------------------------------------------------------------------------------

$("#login-form").addEventListener("submit", signIn);
$("#sign-out").addEventListener("click", () => signOut("Signed out."));
window.addEventListener("hashchange", () => {
  if (location.hash.startsWith("#entry-")) return;  // an in-page jump, not a view
  route();
});
if (currentKey()) showApp();
else $("#api-key").focus();
