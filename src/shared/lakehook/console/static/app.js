// The console: a hash router, and a loop that polls the API and re-renders the page when its data changed.

import { html, toast } from "./ui.js";
import { configure, me } from "./api.js";
import { supported as exactIds } from "./exact.js";
import * as graph from "./pages/graph.js";
import * as asset from "./pages/asset.js";
import * as rules from "./pages/rules.js";
import * as rule from "./pages/rule.js";
import * as triggers from "./pages/triggers.js";
import * as coverage from "./pages/coverage.js";

const REFRESH_MS = 2000;

const ROUTES = [
  [/^\/?$/, graph, () => ({})],
  [/^\/asset\/(.+)$/, asset, (m) => ({ key: decodeURIComponent(m[1]) })],
  [/^\/rules\/?$/, rules, () => ({})],
  [/^\/rule\/(.+)$/, rule, (m) => ({ ruleId: decodeURIComponent(m[1]) })],
  [/^\/triggers(?:\/(.+))?$/, triggers, (m) => ({ ruleId: m[1] ? decodeURIComponent(m[1]) : null })],
  [/^\/coverage\/?$/, coverage, () => ({})],
];

const root = document.getElementById("page");
const ctx = { config: {}, refresh: () => refresh(true), seen: new Map() };
let current = null; // {page, params}
let shown = ""; // the html now on the page
let generation = 0; // bumps on navigation: answers for an older page are dropped
let busy = false;

function route() {
  const [where, query] = (location.hash.slice(1) || "/").split("?");
  for (const [pattern, page, params] of ROUTES) {
    const found = where.match(pattern);
    if (found) return { page, params: { ...params(found), query: new URLSearchParams(query || "") } };
  }
  return { page: null, params: {} };
}

async function navigate() {
  generation += 1;
  current = route();
  shown = "";
  for (const item of document.querySelectorAll("[data-nav]")) {
    item.classList.toggle("active", current.page && item.dataset.nav === current.page.nav);
  }
  if (!current.page) {
    root.innerHTML = String(html`<section class="card"><h1>Not found</h1><p><a href="#/">the graph</a></p></section>`);
    return;
  }
  root.innerHTML = String(html`<p class="muted loading">loading…</p>`);
  window.scrollTo(0, 0);
  await refresh(true);
}

async function refresh(force = false) {
  if (!current || !current.page || (busy && !force)) return;
  const mine = generation;
  busy = true;
  try {
    const out = String(await current.page.render(current.params, ctx));
    if (mine !== generation) return;
    if (out !== shown) {
      const open = [...root.querySelectorAll("details[open][id]")].map((d) => d.id);
      const focused = document.activeElement && document.activeElement.id;
      root.innerHTML = out;
      shown = out;
      for (const id of open) document.getElementById(id)?.setAttribute("open", "");
      if (focused) document.getElementById(focused)?.focus();
      current.page.mounted?.(root, current.params, ctx);
    }
    live(true);
  } catch (error) {
    if (mine !== generation) return;
    live(false, error.message);
    if (!shown) root.innerHTML = String(html`<section class="card error-card"><h1>Cannot load this page</h1><p>${error.message}</p></section>`);
  } finally {
    busy = false;
  }
}

function live(ok, message = "") {
  const badge = document.getElementById("live");
  const banner = document.getElementById("banner");
  const now = new Date().toISOString().slice(11, 19);
  badge.textContent = ok ? `live · ${now} UTC` : "API unreachable";
  badge.className = ok ? "live ok" : "live bad";
  banner.hidden = ok;
  banner.textContent = ok ? "" : `The API did not answer: ${message}. Retrying every ${REFRESH_MS / 1000} s.`;
}

// Buttons carry data-action; the page's actions do the work, then the page refreshes at once.
root.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-action]");
  if (!button || !current?.page?.actions) return;
  const action = current.page.actions[button.dataset.action];
  if (!action) return;
  event.preventDefault();
  try {
    await action(button.dataset, ctx);
  } catch (error) {
    toast(error.message, "bad");
  }
  await refresh(true);
});

root.addEventListener("submit", async (event) => {
  const form = event.target.closest("form[data-submit]");
  if (!form || !current?.page?.actions) return;
  event.preventDefault();
  await current.page.actions[form.dataset.submit](Object.fromEntries(new FormData(form)), ctx);
});

// What the credentials may do (GET /me): without OPERATE, style.css hides every action button and the backtest
// form (the API refuses them anyway). An API without /me (before roles) is an ADMIN's.
async function role() {
  let grant = { role: "ADMIN", allowedActions: ["READ", "OPERATE", "ADMINISTER"], scope: { rules: [], assets: [] } };
  try {
    grant = await me();
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  ctx.me = grant;
  document.body.dataset.role = grant.role;
  document.body.dataset.operate = String((grant.allowedActions || []).includes("OPERATE"));
  const scope = [...(grant.scope.rules || []), ...(grant.scope.assets || [])];
  return `${grant.role}${scope.length ? ` (${scope.join(", ")})` : ""}`;
}

async function start() {
  try {
    ctx.config = await configure();
    document.getElementById("target").textContent = `${ctx.config.apiUrl} · ${ctx.config.auth}`;
    document.getElementById("target").textContent += ` · ${await role()}`;
  } catch {
    /* the banner will say the API is unreachable */
  }
  if (!exactIds) {
    const warning = document.getElementById("exact-ids");
    warning.hidden = false;
    warning.textContent =
      "This browser rounds integers above 2^53 (it lacks JSON.parse source text access): 64-bit snapshot ids " +
      "may be shown wrong. Use Chromium 114+, Firefox 135+ or Safari 18.4+.";
  }
  window.addEventListener("hashchange", navigate);
  await navigate();
  setInterval(() => {
    if (!document.hidden) refresh(false);
  }, REFRESH_MS);
}

start();
