// Every rule: its status, members, outlets, target and newest trigger.

import * as api from "../api.js";
import { html, badge, short, time, ruleHref, triggersHref, assetHref } from "../ui.js";
import { ruleHealth, memberKeys, targetLabel, notLoaded, failureOf } from "./model.js";

export const nav = "rules";

export async function render() {
  const rules = await api.rules();
  const explains = await Promise.all(rules.map((r) => api.explain(r.ruleId).catch(notLoaded)));
  return html`
    <section class="page-head"><h1>Rules</h1><p class="muted">${rules.length} rules; click one for why it has (not) run.</p></section>
    <section class="card">
      ${rules.length ? html`<table class="table" id="rules">
        <thead><tr><th>rule</th><th>status</th><th>reads</th><th>outlets</th><th>target</th><th>newest trigger</th></tr></thead>
        <tbody>${rules.map((r, i) => {
          const last = explains[i]?.lastTrigger;
          return html`<tr data-rule-row="${r.ruleId}">
            <td><a href="${ruleHref(r.ruleId)}"><strong>${r.ruleId}</strong></a><div class="small muted">${r.description || ""}</div></td>
            <td>${badge(ruleHealth(r, explains[i]).status)}</td>
            <td>${memberKeys(r).map((k) => html`<a href="${assetHref(k)}" class="chip">${short(k)}</a>`)}</td>
            <td>${(r.outlets || []).map((k) => html`<span class="chip">${short(k)}</span>`)}</td>
            <td class="small">${targetLabel(r.target)}</td>
            <td>${last ? html`${badge(last.status)} <span class="small">${time(last.createdAt)}</span> · <a href="${triggersHref(r.ruleId)}" class="small">timeline</a>${failureOf(last) ? html`<div class="small error">${failureOf(last)}</div>` : ""}` : html`<span class="muted">${explains[i]?.loadError ? "not loaded yet" : "none"}</span>`}</td>
          </tr>`;
        })}</tbody></table>` : html`<p class="muted">no rules yet: <code>lakehook apply -f lakehook.yaml</code></p>`}
    </section>`;
}
