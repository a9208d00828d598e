// The asset graph: assets as nodes, each rule as a labelled junction on the edges from its members to its
// declared outlets (or to its target when it declares none), laid out left to right by dagre.

import dagre from "../vendor/dagre.esm.js";
import * as api from "../api.js";
import { html, badge, short, layerOf, assetHref, ruleHref, relative, fitText } from "../ui.js";
import { assetHealth, ruleHealth, memberKeys, outletKeys, targetLabel, notLoaded } from "./model.js";

export const nav = "graph";

const ASSET = { width: 204, height: 64 };
const RULE = { width: 158, height: 42 };
const TARGET = { width: 170, height: 34 };

export async function render() {
  const [assets, rules] = await Promise.all([api.assets(), api.rules()]);
  const keys = new Set(assets.map((a) => a.assetKey));
  for (const rule of rules) for (const key of memberKeys(rule)) keys.add(key);
  const known = [...keys].sort();
  const formats = Object.fromEntries(assets.map((a) => [a.assetKey, a.format]));
  const [states, explains] = await Promise.all([
    // a state the API answers 404 for is an unregistered asset; any other failure is "not loaded", never a fact
    Promise.all(known.map((key) => api.state(key).catch((e) => (e.status === 404 ? null : notLoaded(e))))),
    Promise.all(rules.map((rule) => api.explain(rule.ruleId).catch(notLoaded))),
  ]);
  const stateOf = Object.fromEntries(known.map((key, i) => [key, states[i]]));
  // An asset past its maxAgeSeconds: the rules' explains say so (and since when).
  for (const explained of explains)
    for (const late of explained?.freshness?.overdue || [])
      if (late.assetKey && stateOf[late.assetKey]) stateOf[late.assetKey] = { ...stateOf[late.assetKey], overdue: late };

  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 26, ranksep: 26, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const key of known) g.setNode(`a:${key}`, { ...ASSET, kind: "asset", key });
  rules.forEach((rule, i) => {
    const id = `r:${rule.ruleId}`;
    g.setNode(id, { ...RULE, kind: "rule", rule, explained: explains[i] });
    for (const key of memberKeys(rule)) g.setEdge(`a:${key}`, id, { rule: rule.ruleId }, `${key}>${id}`);
    const outlets = outletKeys(rule, known);
    if (outlets.length) {
      for (const key of outlets) g.setEdge(id, `a:${key}`, { rule: rule.ruleId, out: true }, `${id}>${key}`);
    } else {
      g.setNode(`t:${rule.ruleId}`, { ...TARGET, kind: "target", label: targetLabel(rule.target) });
      g.setEdge(id, `t:${rule.ruleId}`, { rule: rule.ruleId, out: true }, `${id}>target`);
    }
  });
  dagre.layout(g);
  const size = g.graph();

  const edges = g.edges().map((e) => {
    const points = g.edge(e).points;
    const d = points.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
    const health = ruleHealth(null, g.node(e.v).explained || g.node(e.w).explained);
    return html`<path class="edge ${health.tone}" d="${d}" marker-end="url(#arrow)" data-edge-rule="${g.edge(e).rule}"/>`;
  });
  const nodes = g.nodes().map((id) => {
    const n = g.node(id);
    const x = n.x - n.width / 2;
    const y = n.y - n.height / 2;
    if (n.kind === "asset") return assetNode(n, x, y, stateOf[n.key], formats[n.key]);
    if (n.kind === "rule") return ruleNode(n, x, y);
    return html`<g class="node target" data-target="${n.label}" transform="translate(${x},${y})"><title>${n.label}</title>
      <rect width="${n.width}" height="${n.height}" rx="18"/>
      <text x="${n.width / 2}" y="${n.height / 2 + 4}" text-anchor="middle" class="small" data-fit="${n.width - 24}">${n.label}</text></g>`;
  });

  const counts = headCounts(known.map((k) => assetHealth(stateOf[k])), rules.map((r, i) => ruleHealth(r, explains[i])));
  return html`
    <section class="page-head">
      <h1>Asset graph</h1>
      <p class="muted" id="counts" data-failing="${counts.failing}" data-blocked="${counts.blocked}" data-unloaded="${counts.unloaded}">
        ${known.length} assets · ${rules.length} rules · ${counts.failing} failing · ${counts.blocked} blocked${counts.unloaded ? ` · ${counts.unloaded} not loaded yet` : ""}.
        Click an asset or a rule for its page.</p>
    </section>
    <section class="card graph-card">
      <svg id="graph" class="graph" viewBox="0 0 ${Math.ceil(size.width)} ${Math.ceil(size.height)}"
           width="${Math.ceil(size.width)}" height="${Math.ceil(size.height)}" role="img" aria-label="asset graph">
        <defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M0,0 L10,5 L0,10 z" class="arrow"/></marker></defs>
        ${edges}${nodes}
      </svg>
      ${legend()}
    </section>
    ${attention(rules, explains, known, stateOf)}`;
}

/** The header's counts: failing (assets whose checks or source failed, rules whose run failed or errs), blocked
 * (rules held by a check, a cooldown, a quiet period…), and what did not load (neither, until it does). */
function headCounts(assets, rules) {
  const all = [...assets, ...rules];
  return {
    failing: all.filter((h) => h.tone === "bad").length,
    blocked: rules.filter((h) => h.tone === "wait").length,
    unloaded: all.filter((h) => h.status === "NOT_LOADED").length,
  };
}

export function mounted(root) {
  fitText(root); // a label longer than its box is shortened until it fits inside it
}

function assetNode(n, x, y, state, format) {
  const health = assetHealth(state);
  const latest = state && state.latestSnapshotId !== undefined ? state.latestSnapshotId : null;
  const kind = [layerOf(n.key), format || "?", latest === null ? "" : `snapshot ${shortId(latest)}`].filter(Boolean);
  const committed = state && state.latestCommitTime ? `committed ${relative(state.latestCommitTime)}` : health.why;
  return html`<a href="${assetHref(n.key)}" class="node-link"><g class="node asset ${health.tone}" data-asset="${n.key}"
      data-status="${health.status}" transform="translate(${x},${y})">
    <title>${n.key}${latest === null ? "" : `\nsnapshot ${latest}`}${health.why ? "\n" + health.why : ""}</title>
    <rect width="${n.width}" height="${n.height}" rx="9"/>
    <rect class="stripe" width="6" height="${n.height}" rx="3"/>
    <text x="16" y="21" class="name" data-fit="${n.width - 24}">${clip(short(n.key), 22)}</text>
    <text x="16" y="38" class="small" data-fit="${n.width - 24}">${clip(kind.join(" · "), 30)}</text>
    <text x="16" y="54" data-fit="${n.width - 24}" class="small ${health.tone === "bad" ? "warn-text" : ""}">${clip(health.tone === "bad" ? health.why : committed, 30)}</text>
  </g></a>`;
}

function ruleNode(n, x, y) {
  const health = ruleHealth(n.rule, n.explained);
  return html`<a href="${ruleHref(n.rule.ruleId)}" class="node-link"><g class="node rule ${health.tone}" data-rule="${n.rule.ruleId}"
      data-status="${health.status}" transform="translate(${x},${y})">
    <title>rule ${n.rule.ruleId}: ${health.status}</title>
    <rect width="${n.width}" height="${n.height}" rx="22"/>
    <text x="${n.width / 2}" y="18" text-anchor="middle" class="name small-name" data-fit="${n.width - 20}">${clip(n.rule.ruleId, 22)}</text>
    <text x="${n.width / 2}" y="34" text-anchor="middle" class="small" data-fit="${n.width - 20}">${clip(health.status, 24)}</text>
  </g></a>`;
}

/** What needs a look: failing assets, and rules that are blocked or whose newest trigger failed. */
function attention(rules, explains, known, stateOf) {
  const assets = known.filter((key) => ["bad", "wait", "overdue"].includes(assetHealth(stateOf[key]).tone));
  const blocked = rules
    .map((rule, i) => ({ rule, explained: explains[i], health: ruleHealth(rule, explains[i]) }))
    .filter(({ health }) => ["bad", "wait", "overdue"].includes(health.tone));
  const unloaded = known.filter((key) => stateOf[key]?.loadError).length + explains.filter((e) => e?.loadError).length;
  if (!assets.length && !blocked.length) {
    const said = unloaded
      ? `not known yet: ${unloaded} of the answers did not load; retrying every 2 s`
      : "nothing: every rule is ready or waiting for new data";
    return html`<section class="card" id="attention" data-unloaded="${unloaded}"><h2>Needs attention</h2><p class="muted">${said}</p></section>`;
  }
  return html`<section class="card" id="attention" data-unloaded="${unloaded}"><h2>Needs attention</h2><table class="table"><tbody>
    ${assets.map((key) => html`<tr data-attention-asset="${key}"><td>${badge(assetHealth(stateOf[key]).status)}</td><td><a href="${assetHref(key)}"><strong>${short(key)}</strong></a></td><td>${assetHealth(stateOf[key]).why}</td></tr>`)}
    ${blocked.map(({ rule, explained, health }) => html`<tr data-attention-rule="${rule.ruleId}"><td>${badge(health.status)}</td><td><a href="${ruleHref(rule.ruleId)}"><strong>${rule.ruleId}</strong></a></td>
      <td>${health.why || explained?.lastError?.message || (explained?.groups || []).map((g) => g.reason).filter(Boolean).join("; ") || explained?.lastTrigger?.status || ""}</td></tr>`)}
    ${unloaded ? html`<tr><td>${badge("NOT_LOADED")}</td><td colspan="2" class="muted">${unloaded} of the answers did not load; retrying every 2 s</td></tr>` : ""}
  </tbody></table></section>`;
}

function legend() {
  const items = [
    ["good", "ok / ready"],
    ["wait", "blocked"],
    ["idle", "waiting for an update"],
    ["busy", "triggering"],
    ["bad", "failed"],
    ["overdue", "overdue (expectedBy, maxWaitSeconds, maxAgeSeconds)"],
    ["neutral", "no data / disabled"],
  ];
  return html`<ul class="legend">${items.map(([tone, text]) => html`<li><span class="swatch ${tone}"></span>${text}</li>`)}
    <li class="muted">rounded pills are rules; an arrow goes from a rule's members through the rule to its outlets</li></ul>`;
}

const clip = (text, n) => (String(text).length > n ? String(text).slice(0, n - 1) + "…" : String(text));
const shortId = (id) => (String(id).length > 10 ? `${String(id).slice(0, 6)}…` : String(id));

