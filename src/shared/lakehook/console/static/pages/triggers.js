// Triggers, a timeline per rule (newest first): status, the partition a partitioned group's run is for, pinned
// inputs, attempts, next attempt, failure kind, the run's reported status, what its outlets show (confirm), the
// manifest, and a claim's place in the queue while it waits for a run slot (maxInFlight); retry, replay (after its
// pre-flight checklist), evaluate now.

import * as api from "../api.js";
import { html, badge, time, relative, short, snap, partitionOf, assetHref, ruleHref, triggersHref, confirmDialog, toast } from "../ui.js";

export const nav = "triggers";
const LIMIT = 50;

let deployed = false;

export async function render({ ruleId }, ctx) {
  deployed = ctx.config.auth === "SigV4";
  const rules = await api.rules();
  const ids = rules.map((r) => r.ruleId);
  const shown = ruleId ? [ruleId] : ids;
  const lists = await Promise.all(shown.map((id) => api.triggers(id, LIMIT)));
  const items = lists.flat().sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt)));
  // A trigger this page has not shown before is marked new (for a few refreshes), without a reload.
  const seenKey = ruleId || "*";
  const seen = ctx.seen.get(seenKey);
  const now = Date.now();
  const fresh = new Map(seen || []);
  for (const t of items) if (!fresh.has(t.triggerKey)) fresh.set(t.triggerKey, seen ? now : 0);
  ctx.seen.set(seenKey, fresh);
  const isNew = (t) => now - (fresh.get(t.triggerKey) || 0) < 8000;

  return html`
    <section class="page-head">
      <div class="title-row">
        <h1>Triggers ${ruleId ? html`<span class="muted">of</span> <a href="${ruleHref(ruleId)}">${ruleId}</a>` : html`<span class="muted">of every rule</span>`}</h1>
        ${ruleId ? html`<div class="actions"><button class="primary" data-action="evaluate" data-rule="${ruleId}" id="evaluate">Evaluate now</button></div>` : ""}
      </div>
      <nav class="tabs">
        <a href="#/triggers" class="${ruleId ? "" : "active"}">all rules</a>
        ${ids.map((id) => html`<a href="${triggersHref(id)}" class="${id === ruleId ? "active" : ""}" data-tab="${id}">${id}</a>`)}
      </nav>
    </section>
    <section class="timeline" id="timeline" data-count="${items.length}">
      ${items.length ? items.map((t) => entry(t, isNew(t), !ruleId)) : html`<p class="muted card">no triggers yet</p>`}
    </section>`;
}

function entry(t, isNew, showRule) {
  const failed = t.status === "FAILED";
  const waiting = t.status === "TRIGGERING" && t.waitingForSlot ? t.waitingForSlot : null;
  return html`<article class="trigger ${t.status.toLowerCase()} ${isNew ? "new" : ""}" data-trigger="${t.triggerKey}" data-status="${t.status}" data-waiting="${waiting ? waiting.position ?? "?" : ""}">
    <div class="dot"></div>
    <div class="trigger-body card">
      <header>
        ${badge(t.status)} ${t.failure ? badge(t.failure) : ""} ${waiting ? html`<span class="badge busy" data-key="waitingForSlot">waiting for a slot #${waiting.position ?? "?"}</span>` : ""} ${isNew ? html`<span class="badge busy">new</span>` : ""}
        ${showRule ? html`<a href="${ruleHref(t.ruleId)}"><strong>${t.ruleId}</strong></a>` : ""}
        <span class="muted">group ${t.groupId}</span> ${partitionOf(t.partition)}
        <span class="spacer"></span>
        ${time(t.createdAt)} <span class="muted small">${relative(t.createdAt)}</span>
        <span class="actions">
          ${failed ? html`<button class="primary small-button" data-action="retry" data-key="${t.triggerKey}">Retry</button>` : ""}
          <button class="secondary small-button" data-action="replay" data-key="${t.triggerKey}">Replay…</button>
        </span>
      </header>
      <p class="mono small key">${t.triggerKey}${t.replayOf ? html` <span class="muted">(replay of ${t.replayOf})</span>` : ""}</p>
      <div class="facts">
        <div><h3>pinned inputs</h3><ul class="plain">${t.inputs.map((i) => html`<li><a href="${assetHref(i.assetKey)}">${short(i.assetKey)}</a> @ ${snap(i.snapshotId)}${i.watermark ? html` <span class="muted">wm ${time(i.watermark)}</span>` : ""}</li>`)}</ul>
          ${t.window ? html`<p class="small">window ${time(t.window.start)} → ${time(t.window.end)}</p>` : ""}</div>
        <div><h3>dispatch</h3><dl class="kv">
          ${waiting ? html`<dt>waiting for a slot</dt><dd data-key="slot">#${waiting.position ?? "?"} in the queue, ${waiting.inFlight} of ${waiting.maxInFlight} in flight, since ${time(waiting.since)}</dd>` : ""}
          <dt>attempts</dt><dd data-key="attempts">${t.attempts}</dd>
          <dt>retries by hand</dt><dd data-key="retries">${t.retries ?? 0}</dd>
          ${t.nextAttemptAt ? html`<dt>next attempt</dt><dd data-key="nextAttemptAt">${time(t.nextAttemptAt)} (${relative(t.nextAttemptAt)})</dd>` : ""}
          ${t.failingSince ? html`<dt>failing since</dt><dd>${time(t.failingSince)}</dd>` : ""}
          ${t.failureCode ? html`<dt>failure</dt><dd data-key="failureCode">${t.failure} · ${t.failureCode}</dd>` : ""}
          ${t.targetRunId ? html`<dt>target run</dt><dd class="mono">${t.targetRunId}</dd>` : ""}
        </dl></div>
        <div><h3>run</h3><dl class="kv">
          <dt>reported</dt><dd data-key="runStatus">${t.runStatus ? badge(t.runStatus) : html`<span class="muted">not yet</span>`}</dd>
          ${t.completedAt ? html`<dt>completed</dt><dd>${time(t.completedAt)}</dd>` : ""}
          ${t.runState ? html`<dt>target says</dt><dd>${t.runState.state}${t.runState.detail ? ` — ${t.runState.detail}` : ""}</dd>` : ""}
          ${confirmation(t)}
          ${(t.outlets || []).length ? html`<dt>outlets</dt><dd>${t.outlets.map((o) => html`<a href="${assetHref(o.assetKey)}">${short(o.assetKey)}</a> @ ${snap(o.snapshotId)} `)}</dd>` : ""}
          <dt>manifest</dt><dd>${manifest(t.manifestUri)}</dd>
        </dl></div>
      </div>
      ${t.reason ? html`<p class="${failed ? "error" : "muted"} small reason">${t.reason}</p>` : ""}
    </div>
  </article>`;
}

// A rule with confirm: what the outlet tables show of the run (CONFIRMED by a commit, NOT_ADVANCED, or awaited).
function confirmation(t) {
  const c = t.confirmation;
  if (!c && !t.confirmBy) return "";
  if (!c) return html`<dt>outlets show</dt><dd data-key="confirmation"><span class="muted">awaiting a commit by ${time(t.confirmBy)}</span></dd>`;
  const commit = c.assetKey ? html` <a href="${assetHref(c.assetKey)}">${short(c.assetKey)}</a> @ ${snap(c.snapshotId)}` : "";
  return html`<dt>outlets show</dt><dd data-key="confirmation">${badge(c.state)}${commit}${c.late ? html` <span class="muted">late</span>` : ""}</dd>`;
}

function manifest(uri) {
  if (!uri) return html`<span class="muted">not written yet</span>`;
  const found = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
  const name = found ? found[2].split("/").pop() : uri;
  if (!found || !deployed) return html`<span class="mono small" title="${uri}">${name}</span>`;
  // The AWS console shows a deployed stack's manifest; a local stack's lives in its moto server.
  const href = `https://s3.console.aws.amazon.com/s3/object/${found[1]}?prefix=${encodeURIComponent(found[2])}`;
  return html`<a class="mono small" href="${href}" target="_blank" rel="noopener noreferrer" title="${uri}">${name}</a>`;
}

export const actions = {
  async retry({ key }) {
    const ok = await confirmDialog({
      title: "Retry this trigger?",
      body: html`<p class="mono small">${key}</p><p>It goes back to TRIGGERING under the same key with a fresh attempt budget.
        The dispatcher starts it through the target's idempotency primitive, so a run an earlier attempt started is found,
        never started twice. Fix the cause first.</p>`,
      confirm: "Retry",
    });
    if (!ok) return;
    const answer = await api.api(`/triggers/${api.part(key)}/retry`, { method: "POST", body: {} });
    toast(`retrying ${short(answer.triggerKey)}: ${answer.status}`);
  },

  async replay({ key }) {
    const ok = await confirmDialog({
      title: "Replay this trigger?",
      body: html`<p class="mono small">${key}</p><p>A new run that reads exactly the same pinned inputs. Pre-flight checklist:</p>
        <div id="preflight" class="preflight"><p class="muted">checking the pinned inputs…</p></div>`,
      confirm: "Replay",
      load: async (holder) => {
        const dry = await api.api(api.path(`/triggers/${api.part(key)}/replay`, { dryRun: true }), { method: "POST", body: {} });
        holder.querySelector("#preflight").innerHTML = String(checklist(dry.preflight));
        return { ok: dry.preflight.ok };
      },
    });
    if (!ok) return;
    const answer = await api.api(`/triggers/${api.part(key)}/replay`, { method: "POST", body: {} });
    toast(`replay claimed: ${answer.replay ? answer.replay.triggerKey : "?"}`);
  },

  async evaluate({ rule }) {
    const { actions: ruleActions } = await import("./rule.js");
    await ruleActions.evaluate({ rule });
  },
};

function checklist(preflight) {
  const mark = { PASSED: "✓", FAILED: "✗", SKIPPED: "–" };
  return html`<ul class="checklist" data-ok="${preflight.ok}">${(preflight.items || []).map(
    (item) => html`<li class="${String(item.status).toLowerCase()}" data-check="${item.check}">
      <span class="mark">${mark[item.status] || "?"}</span>
      <div><strong>${String(item.check).replace(/_/g, " ").toLowerCase()}</strong> ${badge(item.status)}
        ${item.assetKey ? html`<span class="small">${short(item.assetKey)}</span>` : ""}
        <div class="small muted">${item.reason || ""}</div></div></li>`
  )}</ul>
  <p class="${preflight.ok ? "" : "error"}">${preflight.ok ? "the pre-flight checks allow a replay" : "a check failed: replay is refused"}</p>`;
}
