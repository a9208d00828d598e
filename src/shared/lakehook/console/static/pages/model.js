// What several pages derive from the API's answers: an asset's health, a rule's status, the edges.

/** An asset's colour on the graph: not registered, overdue (maxAgeSeconds, as explain says), failed checks, a source
 * BLOCKED or with a GAP (its sourceHealth), polling trouble, no data yet, or fine. */
export function assetHealth(state) {
  if (state && state.loadError) return { status: "NOT_LOADED", tone: "neutral", why: `not loaded yet (${state.loadError})` };
  if (!state || !state.registered) return { status: "UNREGISTERED", tone: "neutral", why: "not registered" };
  if (state.overdue) return { status: "OVERDUE", tone: "overdue", why: state.overdue.reason };
  if (state.qualityStatus === "FAILED")
    return { status: "QUALITY_FAILED", tone: "bad", why: `quality failed on snapshot ${state.qualityFailedSnapshotId ?? "?"}` };
  if (state.schemaStatus === "REJECTED") return { status: "SCHEMA_REJECTED", tone: "bad", why: "schema change rejected" };
  const source = state.sourceHealth;
  if (source && (source.state === "BLOCKED" || source.state === "GAP"))
    return { status: `SOURCE_${source.state}`, tone: "bad", why: sourceSays(source) };
  const poll = state.pollStatus || {};
  if (poll.consecutiveFailures > 0) return { status: "POLL_FAILING", tone: "wait", why: poll.lastError || "polling fails" };
  if (state.latestSnapshotId === undefined || state.latestSnapshotId === null)
    return { status: "NO_SNAPSHOT", tone: "neutral", why: "no snapshot yet" };
  return { status: "OK", tone: "good", why: "" };
}

/** What a source's health says, as explain says it: "<state> since <when> because <why>". */
export function sourceSays(source) {
  return `${source.state}${source.since ? ` since ${source.since}` : ""}${source.reason ? ` because ${source.reason}` : ""}`;
}

/** A rule's colour: disabled, its newest trigger failed or running, overdue (freshness), ready, or blocked (and by what). */
export function ruleHealth(rule, explained) {
  if (rule && rule.enabled === false) return { status: "DISABLED", tone: "neutral" };
  if (!explained || explained.loadError)
    return { status: "NOT_LOADED", tone: "neutral", why: `not loaded yet${explained ? ` (${explained.loadError})` : ""}` };
  const last = explained.lastTrigger;
  if (last && last.status === "FAILED")
    return { status: "FAILED", tone: "bad", why: failureOf(last) };
  if (last && last.status === "TRIGGERING") return { status: "TRIGGERING", tone: "busy" };
  if (explained.lastError) return { status: "ERROR", tone: "bad" };
  if (explained.freshness && explained.freshness.status === "OVERDUE") return { status: "OVERDUE", tone: "overdue" };
  if (explained.ready) return { status: "READY", tone: "good" };
  const statuses = (explained.groups || []).map((g) => g.status);
  const blocked = statuses.find((s) => s && s !== "READY") || "BLOCKED";
  const waiting = blocked.startsWith("WAITING");
  return { status: blocked, tone: waiting ? "idle" : "wait" };
}

/** Why a FAILED trigger failed, as its dispatch recorded it (explain's lastTrigger.failureReason), and whether it
 * is retried by itself. */
export function failureOf(trigger) {
  if (!trigger || trigger.status !== "FAILED") return "";
  const kind = trigger.failure === "RETRYABLE" ? " (retried by itself)" : trigger.failure === "FINAL" ? " (final: retry by hand)" : "";
  return `run failed: ${trigger.failureReason || "no reason recorded"}${kind}`;
}

/** An answer that did not arrive (an error other than 404): a marker the pages show as "not loaded", never as a fact. */
export const notLoaded = (error) => ({ loadError: error && error.message ? error.message : String(error) });

/** Where a polled asset is read from: its catalog and table (Iceberg, Paimon) or its location (Delta, Hudi). */
export function sourceLabel(source) {
  if (!source) return "";
  const where = source.table || source.location || "";
  return [source.catalog, where].filter(Boolean).join(" · ");
}

export function memberKeys(rule) {
  const keys = [];
  for (const group of rule.groups || []) for (const member of group.members || []) keys.push(member.assetKey);
  return [...new Set(keys)];
}

/** The assets a rule's declared outlets name: an exact key, or every known key under a prefix. */
export function outletKeys(rule, known) {
  const found = new Set();
  for (const outlet of rule.outlets || []) {
    if (known.includes(outlet)) found.add(outlet);
    else for (const key of known) if (key.startsWith(outlet)) found.add(key);
  }
  return [...found];
}

export function targetLabel(target) {
  if (!target) return "no target";
  const where = target.url || target.baseUrl || target.stateMachineArn || target.functionName || target.eventBusName || "";
  let host = where;
  try {
    host = where.startsWith("http") ? new URL(where).host + new URL(where).pathname : where.split(":").pop();
  } catch {
    /* keep it as written */
  }
  return `${target.type}${host ? " · " + host : ""}`;
}
