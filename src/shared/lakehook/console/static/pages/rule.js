// One rule: its explain tree (per group and member READY / BLOCKED_BY_… with current and required values,
// cooldown and quiet-period end times, a scheduled group's ticks and what its next tick waits for, a partitioned
// group's partitions and what each waits for), lastError,
// its definition, its newest trigger (and each group's, with the partition a partitioned group's run is for), and
// "evaluate now", and the Backtest panel (pages/backtest.js).

import * as api from "../api.js";
import { html, badge, kv, time, relative, short, partitionOf, pinned, assetHref, triggersHref, confirmDialog, toast } from "../ui.js";
import * as backtest from "./backtest.js";
import { ruleHealth, targetLabel, failureOf } from "./model.js";

export const nav = "rules";

export async function render({ ruleId }) {
  const [rule, explained] = await Promise.all([
    api.api(`/rules/${api.part(ruleId)}`),
    api.explain(ruleId),
  ]);
  const health = ruleHealth(rule, explained);
  const policy = rule.policy || {};
  return html`
    <section class="page-head">
      <p class="crumbs"><a href="#/rules">rules</a> / rule</p>
      <div class="title-row">
        <h1 data-rule-title="${ruleId}">${ruleId} ${badge(health.status)}</h1>
        <div class="actions">
          <a class="button secondary" href="${triggersHref(ruleId)}">Trigger timeline</a>
          <button class="primary" data-action="evaluate" data-rule="${ruleId}" id="evaluate">Evaluate now</button>
        </div>
      </div>
      <p>${rule.description || ""}</p>
      <p class="muted small">evaluated ${time(explained.evaluatedAt)} · ${rule.enabled === false ? "disabled" : "enabled"} ·
        mode ${policy.mode || explained.mode} · starts from ${policy.startFrom || explained.startFrom} ·
        cooldown ${policy.minIntervalSeconds ?? 0} s · quiet period ${policy.quietPeriodSeconds ?? 0} s</p>
    </section>
    ${failureOf(explained.lastTrigger) ? html`<section class="card error-card" id="last-failure" data-trigger="${explained.lastTrigger.triggerKey}">
      <h2>Newest run failed</h2><p>${failureOf(explained.lastTrigger)}</p>
      <p class="small muted">${time(explained.lastTrigger.createdAt)} · group ${explained.lastTrigger.groupId} ·
        <a href="${triggersHref(ruleId)}">retry it from the trigger timeline</a></p></section>` : ""}
    ${explained.lastError ? html`<section class="card error-card" id="last-error"><h2>Last error</h2>
      <p>${explained.lastError.message}</p><p class="small muted">${time(explained.lastError.at)}${explained.lastError.groupId ? ` · group ${explained.lastError.groupId}` : ""}</p></section>` : ""}
    <section class="card">
      <h2>Why it has (not) run <span class="muted small">— groups are alternatives (OR); members of a group must all hold (AND)</span></h2>
      ${(explained.groups || []).map((group) => groupTree(group))}
    </section>
    <div class="grid">
      <section class="card"><h2>Target</h2><p>${targetLabel(rule.target)}</p>${kv(rule.target)}</section>
      <section class="card"><h2>Outlets</h2>${(rule.outlets || []).length ? html`<ul class="plain">${rule.outlets.map((o) => html`<li><a href="${assetHref(o)}" class="mono">${o}</a></li>`)}</ul>` : html`<p class="muted">none declared: the run reports no outlets with its token</p>`}</section>
      <section class="card" id="newest-trigger"><h2>Newest trigger</h2>${explained.lastTrigger ? html`<p>${badge(explained.lastTrigger.status)} ${time(explained.lastTrigger.createdAt)} ${partitionOf(explained.lastTrigger.partition)}</p>
        <p class="mono small">${explained.lastTrigger.triggerKey}</p>${failureOf(explained.lastTrigger) ? html`<p class="error" data-key="failureReason">${failureOf(explained.lastTrigger)}</p>` : ""}${pinned(explained.lastTrigger.inputs)}` : html`<p class="muted">never triggered</p>`}</section>
    </div>
    ${backtest.panel(ruleId, groupTree)}`;
}

function groupTree(group) {
  const until = group.until;
  return html`<div class="group" data-group="${group.groupId}">
    <div class="group-head">
      <span class="tree-node">group</span> <strong>${group.groupId}</strong> ${badge(group.status)}
      ${until ? html`<span class="until" data-until="${until}">until ${time(until)} (${relative(until)})</span>` : ""}
      ${group.reason ? html`<div class="reason">${group.reason}</div>` : ""}
    </div>
    ${group.schedule ? scheduleOf(group.schedule) : ""}
    ${group.pendingPartitions != null ? partitionsOf(group) : ""}
    <ul class="members">${(group.members || []).map((m) => html`<li class="member" data-member="${m.assetKey}" data-status="${m.status}">
      <div class="member-head">${badge(m.status)} <a href="${assetHref(m.assetKey)}"><strong>${short(m.assetKey)}</strong></a>
        <span class="muted mono small">${m.assetKey}</span></div>
      ${m.reason ? html`<div class="reason">${m.reason}</div>` : ""}
      <div class="cmp">
        <div><h3>current</h3>${kv(m.current)}</div>
        <div><h3>required</h3>${kv(flatRequired(m.required))}</div>
      </div>
    </li>`)}</ul>
    ${group.lastTrigger ? html`<p class="small muted" data-last-trigger="${group.lastTrigger.triggerKey}">last trigger of this group: ${badge(group.lastTrigger.status)} ${time(group.lastTrigger.createdAt)} ${partitionOf(group.lastTrigger.partition)}</p>` : ""}
  </div>`;
}

// A partitioned group (partitionBy): one line per partition shown (newest keys first), its status and what it waits
// for, as explain (the resolver's evaluation) judged it, and how many partitions are pending in all; and the members'
// newest commits explain evaluated only in part (partialCommits: the resolver takes the rest through its queue).
function partitionsOf(group) {
  const lines = group.partitions || [];
  const partial = group.partialCommits || [];
  return html`<div class="partitions" data-partitions="${group.pendingPartitions}">
    <span class="tree-node">partitions</span> <span class="muted">${group.pendingPartitions} pending · ${lines.length} shown</span>
    ${partial.map((c) => html`<div class="muted small" data-partial="${c.assetKey}"><span class="mono">${c.assetKey}@${c.snapshotId}</span>
      touched ${c.touched} partitions: the first ${c.evaluated} evaluated here, the rest by the resolver</div>`)}
    <ul class="plain small">${lines.map((p) => html`<li data-partition="${p.partition}" data-status="${p.status}">${badge(p.status)}
      <span class="mono">${p.partition}</span>${p.reason ? html` — ${p.reason}` : ""}</li>`)}</ul>
  </div>`;
}

// A scheduled group: its cron in its zone, the last and next tick (UTC as the page shows times, and the schedule's
// own local time), and the members the pending tick waits for, as explain (the resolver's evaluation) judged them.
function scheduleOf(s) {
  const head = html`<span class="tree-node">schedule</span> <span class="mono">${s.cron}</span> <span class="muted">(${s.timezone})</span>`;
  if (s.neverFires)
    return html`<div class="schedule" data-schedule="never-fires">${head} <strong class="bad">never fires</strong>
      <div class="reason error">${s.reason}</div></div>`;
  const tick = (name, label, t, note) => t ? html`<li data-tick="${name}" data-utc="${t.utc}">${label} ${time(t.utc)}
    <span class="muted">(${relative(t.utc)})</span> · <span class="mono small" data-local="${t.local}">${t.local}</span> ${note}</li>` : "";
  const ran = s.ranForLastTick === true ? "· ran for it" : s.ranForLastTick === false ? "· not run for it yet" : "";
  const waits = s.waitsFor;
  const pending = s.pendingTick ? s.pendingTick.utc : "";
  return html`<div class="schedule" data-schedule="${s.cron}">${head}
    <ul class="plain small">
      ${tick("last", "last tick", s.lastTick, ran)}
      ${tick("next", "next tick", s.nextTick, "")}
    </ul>
    ${waits == null ? "" : waits.length === 0
      ? html`<p class="small" data-waits-for="none">the tick at ${time(pending)} waits for no member</p>`
      : html`<p class="small">the tick at ${time(pending)} waits for:</p><ul class="plain small" data-waits-for="members">
        ${waits.map((w) => html`<li data-waits="${w.assetKey}" data-status="${w.status}">${badge(w.status)}
          <a href="${assetHref(w.assetKey)}">${short(w.assetKey)}</a>${w.reason ? html` — ${w.reason}` : ""}</li>`)}</ul>`}
  </div>`;
}

function flatRequired(required) {
  const out = { ...(required || {}) };
  if (out.newerThan && typeof out.newerThan === "object") {
    out.newerThanSnapshotId = out.newerThan.snapshotId;
    delete out.newerThan;
  }
  return out;
}

export const mounted = (root, { ruleId }) => backtest.mounted(root, ruleId);

export const actions = {
  backtest: backtest.run,
  async evaluate({ rule }) {
    const answer = await confirmDialog({
      title: `Evaluate ${rule} now?`,
      body: html`<p>The resolver evaluates the rule at once and claims what is ready; the same versions give the same key,
        so repeating it claims nothing new.</p>
        <label class="check"><input type="checkbox" name="force" id="force"> force a manual run of the current versions
        (a key of its own; the rule's own triggers are unaffected)</label>`,
      confirm: "Evaluate",
    });
    if (!answer) return;
    const result = await api.api(`/rules/${api.part(rule)}/evaluate`, { method: "POST", body: { force: Boolean(answer.force) } });
    const claimed = result.claimed || [];
    toast(claimed.length ? `claimed ${claimed.join(", ")}` : `nothing new to claim: ${result.ready ? "ready, already triggered" : "not ready"}`,
      claimed.length ? "good" : "neutral");
  },
};
