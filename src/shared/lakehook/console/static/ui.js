// Small helpers: escaped HTML templates, badges, times, the confirmation dialog, toasts.

import { stringify } from "./exact.js";

class Raw {
  constructor(text) {
    this.text = text;
  }
  toString() {
    return this.text;
  }
}

export const raw = (text) => new Raw(text);

export function esc(value) {
  return String(value)
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

function show(value) {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return value.map(show).join("");
  return esc(value);
}

/** A template whose interpolations are escaped unless they are html`` or raw() themselves. */
export function html(strings, ...values) {
  let out = strings[0];
  values.forEach((value, i) => {
    out += show(value) + strings[i + 1];
  });
  return new Raw(out);
}

/** Shorten each SVG text[data-fit] (with an ellipsis) until it is no wider than data-fit pixels: measured in the
 * page, so a label never starts or ends outside its box whatever the font. */
export function fitText(root) {
  for (const text of root.querySelectorAll("text[data-fit]")) {
    const room = Number(text.dataset.fit);
    const full = text.textContent;
    for (let n = full.length - 1; n > 0 && text.getComputedTextLength() > room; n -= 1) {
      text.textContent = full.slice(0, n) + "…";
    }
  }
}

export const short = (assetKey) => String(assetKey).split("/").pop();
export const layerOf = (assetKey) => {
  const name = short(assetKey).toLowerCase();
  const prefix = name.split("_")[0];
  return ["ods", "dwd", "dws", "dim", "ads"].includes(prefix) ? prefix.toUpperCase() : "";
};

/** A status word as a coloured badge; the colour family comes from the word. */
export function tone(status) {
  const s = String(status || "").toUpperCase();
  if (["READY", "SUCCEEDED", "PASSED", "COMPATIBLE", "OK", "COVERED", "ACCEPTED", "COMPLETED", "HEALTHY", "CONFIRMED"].includes(s)) return "good";
  if (["FAILED", "FINAL", "REJECTED", "BLOCKED_BY_FAILED_TRIGGER", "ERROR", "GAP", "QUALITY_FAILED", "SCHEMA_REJECTED", "SOURCE_BLOCKED", "SOURCE_GAP", "NOT_ADVANCED"].includes(s))
    return "bad";
  if (s === "OVERDUE") return "overdue";
  if (s.startsWith("WAITING")) return "idle";
  if (["TRIGGERING", "RUNNING", "RETRYABLE", "EVALUATING", "LAGGING"].includes(s)) return "busy";
  if (s.startsWith("BLOCKED") || ["COOLDOWN", "QUIET_PERIOD", "POLL_FAILING"].includes(s)) return "wait";
  return "neutral";
}

export const badge = (status, extra = "") =>
  html`<span class="badge ${tone(status)} ${extra}" data-status="${status}">${status ?? "—"}</span>`;

export function toDate(value) {
  if (value === null || value === undefined || value === "") return null;
  const date = typeof value === "number" ? new Date(value) : new Date(String(value));
  return Number.isNaN(date.getTime()) ? null : date;
}

/** "2026-12-01 08:03:22 UTC" */
export function when(value) {
  const date = toDate(value);
  if (!date) return "—";
  return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

/** "12 s ago", "in 3 min" */
export function relative(value, now = Date.now()) {
  const date = toDate(value);
  if (!date) return "";
  const seconds = Math.round((date.getTime() - now) / 1000);
  const size = Math.abs(seconds);
  const amount =
    size < 60 ? `${size} s` : size < 3600 ? `${Math.round(size / 60)} min` : size < 86400 ? `${Math.round(size / 3600)} h` : `${Math.round(size / 86400)} d`;
  return seconds <= 0 ? `${amount} ago` : `in ${amount}`;
}

export const time = (value) =>
  toDate(value) ? html`<time datetime="${toDate(value).toISOString()}" title="${relative(value)}">${when(value)}</time>` : "—";

/** A snapshot id (or version) in full: a 64-bit Iceberg id is its exact digits (api.js parses without rounding),
 * so it can be copied into the CLI or compared with the table's own history. */
export const snap = (id) => {
  if (id === null || id === undefined) return "—";
  return html`<span class="mono snap">${String(id)}</span>`;
};

/** A run's pinned inputs: each asset (linked) at its snapshot id in full. */
export const pinned = (inputs) =>
  html`<ul class="plain small">${(inputs || []).map((i) => html`<li><a href="${assetHref(i.assetKey)}">${short(i.assetKey)}</a> @ ${snap(i.snapshotId)}</li>`)}</ul>`;

/** The partition a partitioned group's run is for (its trigger's `partition`, e.g. dt=2026-12-01), as a chip;
 * nothing for a run of no partition. */
export const partitionOf = (key) =>
  key === null || key === undefined ? "" : html`<span class="chip" data-key="partition" title="the partition this run is for">${key}</span>`;

export const humanize = (key) =>
  String(key)
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase();

/** An object as a definition list, nested objects compact. */
export function kv(object, { empty = "—" } = {}) {
  const entries = Object.entries(object || {}).filter(([, v]) => v !== null && v !== undefined);
  if (!entries.length) return html`<span class="muted">${empty}</span>`;
  return html`<dl class="kv">${entries.map(
    ([k, v]) => html`<dt>${humanize(k)}</dt><dd data-key="${k}">${value(k, v)}</dd>`
  )}</dl>`;
}

function value(key, v) {
  if (typeof v === "object") {
    if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === "object" ? stringify(x) : x)).join(", ") : "[]";
    return html`<code>${stringify(v)}</code>`;
  }
  if (/time$|At$|until$/i.test(key) && (typeof v === "number" || /^\d{4}-/.test(String(v)))) return time(v);
  if (/watermark/i.test(key) && typeof v === "number") return time(v);
  if (/snapshotId$/i.test(key)) return snap(v);
  return String(v);
}

export const assetHref = (key) => `#/asset/${encodeURIComponent(key)}`;
export const ruleHref = (id) => `#/rule/${encodeURIComponent(id)}`;
export const triggersHref = (id) => `#/triggers/${encodeURIComponent(id)}`;

// --- the confirmation dialog ------------------------------------------------------------------

/**
 * Ask before acting. `body` is html; `load` (optional) fills the body asynchronously (the replay's
 * pre-flight checklist) and may return {ok: false} to keep the confirm button disabled.
 * Resolves to the dialog's form values (an object) when confirmed, or null.
 */
export function confirmDialog({ title, body, confirm = "Confirm", load = null, danger = false }) {
  const dialog = document.getElementById("confirm");
  const ok = document.getElementById("confirm-ok");
  document.getElementById("confirm-title").textContent = title;
  const holder = document.getElementById("confirm-body");
  holder.innerHTML = String(body);
  ok.textContent = confirm;
  ok.className = danger ? "danger" : "primary";
  ok.disabled = Boolean(load);
  dialog.returnValue = "";
  dialog.showModal();
  if (load) {
    load(holder).then(
      (result) => {
        ok.disabled = result && result.ok === false;
      },
      (error) => {
        holder.insertAdjacentHTML("beforeend", String(html`<p class="error">${error.message}</p>`));
      }
    );
  }
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        if (dialog.returnValue !== "ok") return resolve(null);
        const values = {};
        for (const input of holder.querySelectorAll("input[name]")) {
          values[input.name] = input.type === "checkbox" ? input.checked : input.value;
        }
        resolve(values);
      },
      { once: true }
    );
  });
}

export function toast(message, kind = "good") {
  const box = document.getElementById("toasts");
  const item = document.createElement("div");
  item.className = `toast ${kind}`;
  item.setAttribute("role", kind === "bad" ? "alert" : "status");
  item.textContent = message;
  box.append(item);
  setTimeout(() => item.remove(), kind === "bad" ? 12000 : 6000);
}
