// The rule page's Backtest panel: POST /rules/{id}/backtest for the stored rule over an optional [from, to) (empty:
// the API's defaults, the oldest event kept and now), and its answer: the runs the rule would have started (key,
// partition or window, pinned inputs, when), what it would wait for now, and how far back the history went. A 400
// (a bad range, a history too long) is shown as the API's message, never as an empty list; while it runs, it says so.
// The page re-renders every 2 s, so the panel's inputs and answer live here, per rule, not in the page's DOM.

import * as api from "../api.js";
import { html, time, when, partitionOf, pinned } from "../ui.js";

const panels = new Map(); // ruleId -> {from, to, loading, answer, error}

/** The panel's one state object per rule, changed in place (what is typed while a backtest runs never drops it). */
function stateOf(ruleId) {
  if (!panels.has(ruleId)) panels.set(ruleId, { from: "", to: "" });
  return panels.get(ruleId);
}

/** A datetime-local value (UTC, as the page shows times) as epoch ms; empty: absent (the API's default). */
export function instant(value) {
  if (!value) return undefined;
  const ms = Date.parse(value.length === 16 ? `${value}:00Z` : `${value}Z`);
  return Number.isNaN(ms) ? value : ms; // a value the browser let through unparsed: the API says what is wrong
}

export function panel(ruleId, groupTree) {
  const s = stateOf(ruleId);
  const phase = s.loading ? "loading" : s.error ? "error" : s.answer ? "done" : "idle";
  return html`<section class="card" id="backtest" data-state="${phase}">
    <h2>Backtest <span class="muted small">— the stored rule tried on the kept event history; nothing is written or started</span></h2>
    <form class="range" data-submit="backtest" id="backtest-form">
      <input type="hidden" name="ruleId" value="${ruleId}">
      <label>from (UTC) <input type="datetime-local" name="from" id="backtest-from" value="${s.from}"></label>
      <label>to (UTC) <input type="datetime-local" name="to" id="backtest-to" value="${s.to}"></label>
      <button class="primary" id="backtest-run" ${s.loading ? "disabled" : ""}>Backtest</button>
    </form>
    <p class="muted small">empty from: the oldest event kept; empty to: now</p>
    ${s.loading ? html`<p class="muted" id="backtest-loading" role="status">backtesting: replaying the history…</p>` : ""}
    ${s.error ? html`<p class="error" id="backtest-error" role="alert">${s.error}</p>` : ""}
    ${s.answer && !s.loading ? answerOf(s.answer, groupTree) : ""}
  </section>`;
}

function answerOf(answer, groupTree) {
  const runs = answer.runs || [];
  const h = answer.history;
  const counted = runs.length ? `${runs.length} run${runs.length === 1 ? "" : "s"} it would have started` : "no run it would have started";
  return html`<div id="backtest-answer" data-runs="${runs.length}">
    <p id="backtest-summary">${when(answer.from)} → ${when(answer.to)}: ${counted}</p>
    <p class="muted small" id="backtest-history" data-kept-from="${h.keptFrom}">history kept from ${time(h.keptFrom)}
      (events are kept ${h.eventRetentionDays} days) · ${h.eventsRead} events read, ${h.eventsBeforeFrom} of them before
      from · ${h.queries} ${h.queries === 1 ? "query" : "queries"} of the events index</p>
    ${(answer.errors || []).map((e) => html`<p class="error" data-backtest-error>${e}</p>`)}
    ${runs.length ? html`<table class="table" id="backtest-runs"><thead><tr><th>trigger key</th><th>partition or window</th>
      <th>pinned inputs</th><th>when</th></tr></thead><tbody>${runs.map((r) => html`<tr data-run="${r.triggerKey}">
        <td class="mono small">${r.triggerKey}</td><td>${scopeOf(r)}</td>
        <td>${pinned(r.inputs)}</td><td>${time(r.createdAt)}</td></tr>`)}</tbody></table>` : ""}
    <h3>What it would wait for now</h3>
    <div id="backtest-waiting">${(answer.waitingNow?.groups || []).map((group) => groupTree(group))}</div>
  </div>`;
}

/** The partition a run is for, or its window; a dash for a run of neither. */
function scopeOf(run) {
  if (run.window) return html`<span class="small" data-window>${when(run.window.start)} → ${when(run.window.end)}</span>`;
  return run.partition == null ? html`<span class="muted">—</span>` : partitionOf(run.partition);
}

/** Keep what is typed in from and to across the page's re-renders. */
export function mounted(root, ruleId) {
  for (const name of ["from", "to"]) {
    root.querySelector(`#backtest-${name}`)?.addEventListener("input", (event) => {
      stateOf(ruleId)[name] = event.target.value;
    });
  }
}

export async function run({ ruleId, from, to }, ctx) {
  const s = stateOf(ruleId);
  if (s.loading) return; // one backtest at a time per rule
  Object.assign(s, { from, to, loading: true, answer: null, error: null });
  await ctx.refresh();
  try {
    s.answer = await api.api(`/rules/${api.part(ruleId)}/backtest`, { method: "POST", body: { from: instant(from), to: instant(to) } });
  } catch (error) {
    s.error = error.message;
  }
  s.loading = false;
  await ctx.refresh();
}
