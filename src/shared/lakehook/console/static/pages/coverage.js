// Coverage of an asset over a chosen range: a bar from start to end with the exact gaps.

import * as api from "../api.js";
import { html, short, time, when } from "../ui.js";

export const nav = "coverage";
const DAY = 86400000;

export async function render({ query }) {
  const assets = await api.assets();
  const asset = query.get("asset") || assets[0]?.assetKey || "";
  const end = query.get("end") || isoMinute(new Date(Math.ceil(Date.now() / DAY) * DAY));
  const start = query.get("start") || isoMinute(new Date(Date.parse(end + "Z") - 7 * DAY));
  const partition = query.get("partition") || "";
  let report = null;
  let error = null;
  if (asset) {
    try {
      report = await api.api(api.path("/assets/coverage", { assetKey: asset, start: start + "Z", end: end + "Z", partitionKey: partition }));
    } catch (e) {
      error = e.message;
    }
  }
  return html`
    <section class="page-head"><h1>Coverage</h1>
      <p class="muted">Whether the intervals an asset's events reported (INTERVAL_COVERED) cover [start, end), and exactly where they do not.</p></section>
    <section class="card">
      <form class="range" data-submit="show" id="coverage-form">
        <label>asset <select name="asset" id="cov-asset">${assets.map((a) => html`<option value="${a.assetKey}" ${a.assetKey === asset ? "selected" : ""}>${short(a.assetKey)}</option>`)}</select></label>
        <label>start (UTC) <input type="datetime-local" name="start" id="cov-start" value="${start}"></label>
        <label>end (UTC) <input type="datetime-local" name="end" id="cov-end" value="${end}"></label>
        <label>partition <input name="partition" id="cov-partition" value="${partition}" placeholder="(none)"></label>
        <button class="primary">Show</button>
      </form>
    </section>
    ${error ? html`<section class="card error-card"><p>${error}</p></section>` : ""}
    ${report ? bar(report) : ""}`;
}

function bar(report) {
  const s = Date.parse(report.start);
  const e = Date.parse(report.end);
  const span = Math.max(e - s, 1);
  const x = (t) => ((Math.min(Math.max(Date.parse(t), s), e) - s) / span) * 1000;
  const gaps = report.missing || [];
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => ({ f, t: new Date(s + f * span) }));
  // Nothing reported in the range (an asset that never reports INTERVAL_COVERED, or none for this range): not a gap
  // to alarm on, but no coverage known; said so, in neutral colours.
  const none = !report.covered && report.coveredMs === 0;
  const verdict = report.covered ? "COVERED" : none ? "NO INTERVAL REPORTED" : `${gaps.length} GAP${gaps.length === 1 ? "" : "S"}`;
  return html`<section class="card" id="coverage" data-covered="${report.covered}" data-gaps="${gaps.length}" data-ratio="${report.coveredRatio}" data-reported="${none ? "false" : "true"}">
    <h2>${short(report.assetKey)} <span class="badge ${report.covered ? "good" : none ? "neutral" : "bad"}" id="verdict">${verdict}</span></h2>
    <p class="muted small">${when(report.start)} → ${when(report.end)}${report.partitionKey ? ` · partition ${report.partitionKey}` : ""}</p>
    <p id="progress">${(report.coveredRatio * 100).toFixed(2)}% covered: ${length(report.coveredMs)} of ${length(report.totalMs)}</p>
    <svg class="coverage-bar${none ? " unknown" : ""}" viewBox="0 0 1000 58" preserveAspectRatio="none" role="img" aria-label="coverage bar">
      <rect class="covered" x="0" y="4" width="1000" height="30" rx="4"/>
      ${gaps.map((g) => html`<rect class="gap" x="${x(g.start)}" y="4" width="${Math.max(x(g.end) - x(g.start), 1.5)}" height="30"><title>gap ${when(g.start)} → ${when(g.end)}</title></rect>`)}
    </svg>
    <div class="ticks">${ticks.map(({ t }) => html`<span>${when(t).slice(0, 16)}</span>`)}</div>
    <h3>Gaps</h3>
    ${none ? html`<p id="none-reported">no interval of [start, end) was reported covered: this asset's events
      (INTERVAL_COVERED) have not said anything about this range, so nothing is known to be missing or covered</p>` : gaps.length ? html`<table class="table" id="gaps"><thead><tr><th>from</th><th>to</th><th>length</th></tr></thead>
      <tbody>${gaps.map((g) => html`<tr><td>${time(g.start)}</td><td>${time(g.end)}</td><td>${length(Date.parse(g.end) - Date.parse(g.start))}</td></tr>`)}</tbody></table>`
      : html`<p>none: every instant of the range is covered</p>`}
  </section>`;
}

function length(ms) {
  const minutes = Math.round(ms / 60000);
  if (minutes < 120) return `${minutes} min`;
  const hours = ms / 3600000;
  return hours < 48 ? `${hours.toFixed(1)} h` : `${(hours / 24).toFixed(1)} d`;
}

const isoMinute = (date) => date.toISOString().slice(0, 16);

export const actions = {
  show(values) {
    const query = new URLSearchParams(Object.entries(values).filter(([, v]) => v));
    location.hash = `#/coverage?${query}`;
  },
};
