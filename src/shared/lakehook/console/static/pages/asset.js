// One asset: its state, snapshots (commit time, operation), watermark, quality and schema verdicts,
// spool manifest, source health and poll status with its last error, recent events, and the rules that read or
// write it.

import * as api from "../api.js";
import { stringify } from "../exact.js";
import { html, badge, kv, time, snap, short, ruleHref, triggersHref, humanize, relative } from "../ui.js";
import { assetHealth, memberKeys, outletKeys, sourceSays, sourceLabel } from "./model.js";

export const nav = "graph";

const STATE_FIELDS = [
  "latestSnapshotId", "latestCommitTime", "latestCommitKind", "latestSchemaId", "watermark", "tags",
  "backfillStatus", "version", "updatedAt",
];

// The events card's range (GET /assets/events): received time [start, end) or snapshot order [fromVersion, toVersion].
const RANGE = ["start", "end", "fromVersion", "toVersion"];

export async function render({ key, query }) {
  const range = Object.fromEntries(RANGE.map((name) => [name, query?.get(name) || ""]));
  const filtered = RANGE.some((name) => range[name]);
  const [state, events, registered, rules, ranged] = await Promise.all([
    api.state(key).catch((e) => (e.status === 404 ? null : Promise.reject(e))),
    api.api(api.path("/assets/events", { assetKey: key, limit: 100 })).then((p) => p.items || []),
    api.assets().then((all) => all.find((a) => a.assetKey === key) || null),
    api.rules(),
    filtered ? inRange(key, range) : Promise.resolve(null),
  ]);
  const listed = ranged ? ranged.items : events.slice(0, 30);
  const health = assetHealth(state);
  const snapshots = events.filter((e) => e.eventType === "SNAPSHOT_COMMITTED");
  const manifests = events.filter((e) => e.manifestUri || String(e.eventType).startsWith("MANIFEST_"));
  const reads = rules.filter((r) => memberKeys(r).includes(key));
  const writes = rules.filter((r) => outletKeys(r, [key]).length);
  const poll = state && state.pollStatus;
  const s = state || {};

  return html`
    <section class="page-head">
      <p class="crumbs"><a href="#/">graph</a> / asset</p>
      <h1 class="mono-title" data-asset-title="${key}">${short(key)} ${badge(health.status)}</h1>
      <p class="muted mono">${key}</p>
      ${registered?.description ? html`<p>${registered.description}</p>` : ""}
    </section>
    <div class="grid">
      <section class="card">
        <h2>State</h2>
        ${state ? kv(Object.fromEntries(STATE_FIELDS.filter((f) => s[f] !== undefined).map((f) => [f, s[f]]))) : html`<p class="muted">no state: nothing was ever recorded for this asset</p>`}
        <p class="muted small">format ${registered?.format || "unregistered"}${registered?.source ? html` · polled from <span class="mono" data-key="source">${sourceLabel(registered.source)}</span>` : " · push only"}</p>
      </section>
      <section class="card">
        <h2>Verdicts</h2>
        <dl class="kv">
          <dt>quality</dt><dd data-key="qualityStatus">${s.qualityStatus ? badge(s.qualityStatus) : html`<span class="muted">no check reported</span>`}</dd>
          <dt>passed on snapshot</dt><dd data-key="qualityPassedSnapshotId">${snap(s.qualityPassedSnapshotId)}</dd>
          <dt>failed on snapshot</dt><dd data-key="qualityFailedSnapshotId">${snap(s.qualityFailedSnapshotId)}</dd>
          <dt>schema</dt><dd data-key="schemaStatus">${s.schemaStatus ? badge(s.schemaStatus) : "—"}</dd>
          <dt>watermark</dt><dd data-key="watermark">${s.watermark ? html`${time(s.watermark)} <span class="muted">(${relative(s.watermark)})</span>` : "—"}</dd>
        </dl>
      </section>
      <section class="card">
        <h2>Polling</h2>
        ${s.notices ? html`<p data-key="notices">${s.notices.summary} · polled every ${s.notices.pollIntervalSeconds} s</p>` : ""}
        ${s.sourceHealth ? html`<p data-key="sourceHealth">source ${badge(s.sourceHealth.state)} <span class="${s.sourceHealth.state === "HEALTHY" ? "muted" : "error"}">${sourceSays(s.sourceHealth)}</span></p>` : ""}
        ${poll ? html`${poll.lastError ? html`<p class="error" data-key="lastError">last error: ${typeof poll.lastError === "string" ? poll.lastError : stringify(poll.lastError)}</p>` : ""}
          ${kv(Object.fromEntries(Object.entries(poll).filter(([k]) => k !== "assetKey" && k !== "lastError")))}`
          : html`<p class="muted">not polled: ${registered?.source ? "no poll has run yet" : "the asset has no source (push only)"}</p>`}
      </section>
      <section class="card">
        <h2>Rules</h2>
        <p class="small muted">read by</p>
        ${reads.length ? html`<ul class="plain">${reads.map((r) => html`<li><a href="${ruleHref(r.ruleId)}">${r.ruleId}</a> · <a href="${triggersHref(r.ruleId)}" class="small">triggers</a></li>`)}</ul>` : html`<p class="muted">no rule</p>`}
        <p class="small muted">written by (declared outlet of)</p>
        ${writes.length ? html`<ul class="plain">${writes.map((r) => html`<li><a href="${ruleHref(r.ruleId)}">${r.ruleId}</a></li>`)}</ul>` : html`<p class="muted">no rule</p>`}
      </section>
    </div>
    <section class="card">
      <h2>Snapshots <span class="muted small">(the newest ${snapshots.length} recorded)</span></h2>
      ${snapshots.length ? html`<table class="table" id="snapshots">
        <thead><tr><th>snapshot</th><th>commit time</th><th>operation</th><th>schema</th><th>records</th><th>quality</th><th>arrived by</th><th>received</th></tr></thead>
        <tbody>${snapshots.map((e) => html`<tr data-snapshot="${e.snapshotId}">
          <td>${snap(e.snapshotId)}</td><td>${time(e.commitTime)}</td><td>${e.commitKind || "—"}</td><td>${e.schemaId ?? "—"}</td>
          <td>${e.totalRecordCount ?? "—"}${e.deltaRecordCount !== undefined ? html` <span class="muted">(+${e.deltaRecordCount})</span>` : ""}</td>
          <td>${qualityOf(e.snapshotId, events)}</td><td>${e.source}${e.producerId ? html` <span class="muted">${e.producerId}</span>` : ""}</td><td>${time(e.receivedAt)}</td></tr>`)}</tbody>
      </table>` : html`<p class="muted">no snapshot recorded</p>`}
    </section>
    <section class="card">
      <h2>Spool manifests</h2>
      ${manifests.length ? html`<table class="table"><thead><tr><th>event</th><th>manifest</th><th>received</th></tr></thead>
        <tbody>${manifests.map((e) => html`<tr><td>${badge(e.eventType)}</td><td class="mono">${e.manifestUri || "—"}</td><td>${time(e.receivedAt)}</td></tr>`)}</tbody></table>`
        : html`<p class="muted">no spool manifest recorded for this asset</p>`}
    </section>
    <section class="card">
      <h2>${filtered ? "Events in range" : "Recent events"}</h2>
      <form class="range" data-submit="filter" id="events-range">
        <input type="hidden" name="asset" value="${key}">
        <label>received from (UTC) <input type="datetime-local" name="start" id="ev-start" value="${range.start}"></label>
        <label>before <input type="datetime-local" name="end" id="ev-end" value="${range.end}"></label>
        <label>or snapshots from <input type="number" min="0" name="fromVersion" id="ev-from" value="${range.fromVersion}"></label>
        <label>to <input type="number" min="0" name="toVersion" id="ev-to" value="${range.toVersion}"></label>
        <button class="primary">Filter</button>
      </form>
      ${ranged?.error ? html`<p class="error" id="events-error">${ranged.error}</p>` : ""}
      <table class="table" id="events">
        <thead><tr><th>received</th><th>event</th><th>snapshot</th><th>details</th><th>source</th></tr></thead>
        <tbody>${listed.map((e) => html`<tr>
          <td>${time(e.receivedAt)}</td><td>${badge(e.eventType.replace(/_/g, " "), tone(e.eventType))}</td><td>${snap(e.snapshotId)}</td>
          <td class="small">${details(e)}</td><td>${e.source}</td></tr>`)}</tbody>
      </table>
    </section>`;
}

// At most 100 events of the range, newest first (the API's answer names a bad bound: shown, not thrown).
async function inRange(key, range) {
  const utc = (value) => (value && !/Z$/.test(value) ? `${value}Z` : value);
  const query = { assetKey: key, limit: 100, ...range, start: utc(range.start), end: utc(range.end) };
  try {
    return { items: (await api.api(api.path("/assets/events", query))).items || [] };
  } catch (e) {
    return { items: [], error: e.message };
  }
}

export const actions = {
  filter(values) {
    const { asset, ...range } = values;
    const query = new URLSearchParams(Object.entries(range).filter(([, v]) => v));
    location.hash = `#/asset/${encodeURIComponent(asset)}${query.toString() ? `?${query}` : ""}`;
  },
};

function qualityOf(snapshotId, events) {
  const checks = events.filter((e) => e.snapshotId === snapshotId && e.eventType.startsWith("QUALITY_CHECK_"));
  if (!checks.length) return html`<span class="muted">—</span>`;
  return badge(checks[0].eventType === "QUALITY_CHECK_PASSED" ? "PASSED" : "FAILED");
}

function tone(eventType) {
  return /FAILED|REJECTED|INTERRUPTED/.test(eventType) ? "as-bad" : /PASSED|APPROVED|COMPLETED|SEALED|COVERED/.test(eventType) ? "as-good" : "";
}

const SKIP = new Set(["eventType", "assetKey", "eventId", "source", "receivedAt", "producerId", "snapshotId"]);
function details(event) {
  const parts = Object.entries(event)
    .filter(([k, v]) => !SKIP.has(k) && v !== null && v !== undefined)
    .map(([k, v]) => `${humanize(k)} ${typeof v === "object" ? stringify(v) : /Time$|watermark/.test(k) && typeof v === "number" ? new Date(v).toISOString() : v}`);
  return parts.join(" · ");
}
