// The console's only way out: /api/* on the console server, which forwards to the lakehook API.
// Answers are parsed without rounding (exact.js): a 64-bit snapshot id is shown, and sent back, digit for digit.

import * as exact from "./exact.js";

let sessionToken = ""; // from /console.json: the server takes a change only with it (no cross-site requests)

/** The console server's config (/console.json): where the API is, how the console reaches it, the session token. */
export async function configure() {
  const config = await fetch("/console.json", { cache: "no-store" }).then((r) => r.json());
  sessionToken = config.token || "";
  return config;
}

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

export async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers["X-Lakehook-Console"] = sessionToken; // the server refuses a change without it (no cross-site forms)
  }
  const answer = await fetch("/api" + path, {
    method,
    headers,
    body: body === undefined ? undefined : exact.stringify(body),
    cache: "no-store",
  });
  const text = await answer.text();
  let data = null;
  try {
    data = text ? exact.parse(text) : null;
  } catch {
    data = text;
  }
  if (!answer.ok) {
    const message = (data && data.message) || text || answer.statusText;
    throw new ApiError(answer.status, `${answer.status}: ${message}`, data);
  }
  return data;
}

export function path(base, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
  }
  const text = query.toString();
  return text ? `${base}?${text}` : base;
}

export const part = (value) => encodeURIComponent(value);

/** Every page of a listing (items + nextToken). */
export async function everything(base, params = {}, limit = 500) {
  const items = [];
  let token = null;
  do {
    const page = await api(path(base, { ...params, limit, nextToken: token }));
    items.push(...(page.items || []));
    token = page.nextToken;
  } while (token);
  return items;
}

export const assets = () => everything("/assets");
/** The credentials' role, scope and allowed actions (GET /me): the page shows only the actions they may take. */
export const me = () => api("/me");
export const rules = () => everything("/rules");
export const state = (key) => api(path("/assets/state", { assetKey: key }));
export const explain = (ruleId) => api(`/rules/${part(ruleId)}/explain`);
export const triggers = (ruleId, limit = 50) => api(path("/triggers", { ruleId, limit })).then((p) => p.items || []);
