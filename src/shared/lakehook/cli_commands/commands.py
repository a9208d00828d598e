"""Read and act on a stack: explain, triggers, trigger, retry, replay, state, coverage, push."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from typing import Any

from lakehook.cli_commands.api import ApiClient, ApiError, CliError, UnreachableError, path_part, request_key_header
from lakehook.cli_commands.inputs import json_value, read_text
from lakehook.cli_commands.output import compact, emit, emit_items
from lakehook.cli_commands.prose import STATE_VERSION_NOTE, mentions, prose, trigger_lines
from lakehook.client.push import PushClient, PushError, PushRejectedError, event_id

TRIGGER_STATUSES = ("TRIGGERING", "SUCCEEDED", "FAILED", "SKIPPED")
# `lakehook triggers`: PARTITION is the partition key a partitioned group's run is for ("-" for other runs)
TRIGGER_COLUMNS = (
    "TRIGGER",
    "STATUS",
    "FAILURE",
    "ATTEMPTS",
    "NEXT ATTEMPT",
    "RUN",
    "RULE",
    "PARTITION",
    "CREATED",
    "INPUTS",
    "REASON",
)


def source_says(health: dict[str, Any]) -> str:
    """A source's health as explain says it: ``BLOCKED since <when> because <why>`` (HEALTHY alone)."""
    since = f" since {health['since']}" if health.get("since") else ""
    because = f" because {health['reason']}" if health.get("reason") else ""
    return f"{health.get('state')}{since}{because}"


def explain(api: ApiClient, args: argparse.Namespace) -> int:
    data = api.get(f"/rules/{path_part(args.rule)}/explain")

    def text(d: dict[str, Any]) -> Iterator[str]:
        verdict = "READY" if d.get("ready") else "NOT READY"
        yield f"rule {d.get('ruleId')}: {verdict}  (evaluated {d.get('evaluatedAt')})"
        for group in d.get("groups", []):
            yield f"  group {group.get('groupId')}: {group.get('status')}"
            if group.get("cannotDecide"):
                yield f"    {group.get('reason')}"
            backlog = group.get("backlog")
            if backlog:
                window = backlog.get("next", {})
                yield (
                    f"    backlog: {backlog.get('pendingWindows')} windows pending, next "
                    f"[{window.get('start')}, {window.get('end')}) at {backlog.get('nextAt')}"
                )
            for skip in group.get("skipped") or []:
                yield f"    skipped: {skip.get('assetKey')}@{skip.get('snapshotId')}: {skip.get('reason')}"
            if isinstance(group.get("schedule"), dict):
                yield from schedule_lines(group["schedule"])
            if isinstance(group.get("require"), dict):
                yield from require_lines(group["require"])
            if group.get("pendingPartitions") is not None:
                yield from partition_lines(group)
            for member in group.get("members", []):
                yield f"    {member.get('status'):<22} {member.get('assetKey')}"
                if member.get("reason"):
                    yield f"        why: {member['reason']}"
                if isinstance(member.get("sourceHealth"), dict):
                    yield f"        source: {source_says(member['sourceHealth'])}"
                if member.get("status") != "READY":
                    yield f"        current: {prose(member.get('current'))}"
                    yield f"        required: {prose(member.get('required'))}"
        yield from trigger_lines(d.get("lastTrigger"))
        yield from in_flight_lines(d.get("inFlight"))
        if mentions(d, "stateVersion"):
            yield f"  {STATE_VERSION_NOTE}"

    emit(args.output, data, text)
    return 0


def in_flight_lines(in_flight: Any) -> Iterator[str]:
    """A rule with maxInFlight: its runs in flight and the triggers waiting for a slot, per scope, next first."""
    if not isinstance(in_flight, dict):
        return
    yield (
        f"  in flight (maxInFlight {in_flight.get('maxInFlight')}, maxRunSeconds {in_flight.get('maxRunSeconds')}): "
        f"{in_flight.get('waitingCount', 0)} waiting for a slot"
    )
    for scope in in_flight.get("scopes") or []:
        where = f"partition {scope['partition']}" if scope.get("partition") is not None else "rule"
        running = ", ".join(scope.get("inFlight") or []) or "none"
        yield f"    {where}: running {running}; {scope.get('waitingCount', 0)} waiting"
        for waiter in scope.get("waiting") or []:
            yield f"      #{waiter.get('position')} {waiter.get('triggerKey')} (claimed {waiter.get('claimedAt')})"


def require_lines(node: dict[str, Any], indent: str = "    ") -> Iterator[str]:
    """A group's require tree as explain answers it, one node a line, each with its verdict, indented by depth."""
    verdict = "holds" if node.get("holds") else "does not hold"
    head = "require: " if indent == "    " else ""
    if node.get("ref") is not None:
        yield f"{indent}{head}{node['ref']} {verdict}"
        return
    op = f"atLeast {node.get('needed')} of" if node.get("op") == "atLeast" else node.get("op")
    terms = node.get("terms") or []
    yield f"{indent}{head}{op} ({node.get('holding')} of {len(terms)} hold): {verdict}"
    for term in terms:
        yield from require_lines(term, indent + "  ")


def partition_lines(group: dict[str, Any]) -> Iterator[str]:
    """A partitioned group's partitions, one line each (``dt=2026-12-01: waiting for …``), and how many wait."""
    partitions = group.get("partitions") or []
    yield f"    partitions: {group.get('pendingPartitions')} pending, {len(partitions)} shown"
    for cut in group.get("partialCommits") or []:
        yield (
            f"      {cut.get('assetKey')}@{cut.get('snapshotId')} touched {cut.get('touched')} partitions: "
            f"evaluated its first {cut.get('evaluated')} here, the rest by the resolver"
        )
    for line in partitions:
        reason = line.get("reason") or line.get("partition")
        yield f"      {line.get('status'):<22} {reason}"


def schedule_lines(schedule: dict[str, Any]) -> Iterator[str]:
    """A scheduled group's cron, ticks (UTC, and in its zone) and what its next run waits for, as explain says."""
    yield f"    schedule: {schedule.get('cron')} ({schedule.get('timezone')})"
    if schedule.get("neverFires"):
        yield f"      never fires: {schedule.get('reason')}"
        return

    def tick(name: str) -> str:
        at = schedule.get(name)
        return f"{at.get('utc')} ({at.get('local')})" if isinstance(at, dict) else "unknown"

    ran = schedule.get("ranForLastTick")
    done = {True: ", ran for it", False: ", not run for it yet", None: ""}.get(ran, "")
    yield f"      last tick: {tick('lastTick')}{done}"
    yield f"      next tick: {tick('nextTick')}"
    waits = schedule.get("waitsFor")
    if waits is None:
        return  # not evaluated (ERROR): the group's reason says why
    pending = schedule.get("pendingTick")
    when = pending.get("utc") if isinstance(pending, dict) else "?"
    if not waits:
        yield f"      the tick at {when} waits for no member"
        return
    yield f"      the tick at {when} waits for:"
    for wait in waits:
        reason = f": {wait['reason']}" if wait.get("reason") else ""
        yield f"        {wait.get('assetKey')} {wait.get('status')}{reason}"


def _rule_ids(api: ApiClient) -> list[str]:
    ids: list[str] = []
    token: str | None = None
    while True:
        page = api.get("/rules", query={"limit": 500, "nextToken": token})
        ids += [r["ruleId"] for r in page.get("items", [])]
        token = page.get("nextToken")
        if not token:
            return ids


def triggers(api: ApiClient, args: argparse.Namespace) -> int:
    rules = [args.rule] if args.rule else _rule_ids(api)
    items: list[dict[str, Any]] = []
    for rule_id in rules:
        page = api.get("/triggers", query={"ruleId": rule_id, "status": args.status, "limit": args.limit})
        items += page.get("items", [])
    items.sort(key=lambda t: str(t.get("createdAt", "")), reverse=True)
    items = items[: args.limit]

    def row(t: dict[str, Any]) -> tuple[Any, ...]:
        return (
            t.get("triggerKey"),
            _status(t),
            t.get("failure") or "-",
            t.get("attempts"),
            t.get("nextAttemptAt") or "-",
            _run(t),
            t.get("ruleId"),
            t.get("partition") or "-",
            t.get("createdAt"),
            ", ".join(f"{i.get('assetKey')}@{i.get('snapshotId', '-')}" for i in t.get("inputs", [])),
            _short(t.get("reason")) if t.get("status") == "FAILED" or ".late." in str(t.get("triggerKey")) else "",
        )

    emit_items(
        args.output, items, TRIGGER_COLUMNS, row, "no triggers" + (f" for rule {args.rule}" if args.rule else "")
    )
    return 0


def _short(text: Any, width: int = 80) -> str:
    value = "" if text is None else " ".join(str(text).split())
    return value if len(value) <= width else value[: width - 1] + "…"


def _status(trigger: dict[str, Any]) -> str:
    """The status, and for a claim held back by maxInFlight its place in the queue (``WAITING_FOR_SLOT #2``)."""
    wait = trigger.get("waitingForSlot")
    if trigger.get("status") == "TRIGGERING" and isinstance(wait, dict):
        return f"WAITING_FOR_SLOT #{wait.get('position') or '?'}"
    return str(trigger.get("status"))


def _run(trigger: dict[str, Any]) -> str:
    """What is known of the run: its own report (``runStatus``), else what the target said (``runState``); then what
    its outlet tables show (``confirmation``: CONFIRMED or NOT_ADVANCED), when decided."""
    said = _said(trigger)
    confirmation = trigger.get("confirmation")
    if not isinstance(confirmation, dict) or not confirmation.get("state"):
        return said
    shown = str(confirmation["state"])
    return shown if said == "-" else f"{said}, {shown}"


def _said(trigger: dict[str, Any]) -> str:
    if trigger.get("runStatus"):
        return str(trigger["runStatus"])
    state = trigger.get("runState")
    if isinstance(state, dict) and state.get("state"):
        return str(state["state"]) + (" (see trigger)" if state.get("detail") else "")
    return "-"


def confirmation_lines(trigger: dict[str, Any]) -> Iterator[str]:
    """What a rule with ``confirm`` knows of the run's outlets: confirmed by which commit, not advanced, or awaited."""
    confirmation = trigger.get("confirmation")
    if isinstance(confirmation, dict) and confirmation.get("state") == "CONFIRMED":
        late = " (late: after it was NOT_ADVANCED)" if confirmation.get("late") else ""
        yield (
            f"  confirmed by the data: {confirmation.get('assetKey')} snapshot {confirmation.get('snapshotId')}, "
            f"committed {confirmation.get('commitTime')}{late}"
        )
    elif isinstance(confirmation, dict):
        yield (
            f"  NOT_ADVANCED: no outlet commit carried the trigger key by {trigger.get('confirmBy')} "
            f"(decided {confirmation.get('decidedAt')})"
        )
    elif trigger.get("confirmBy"):
        yield f"  awaiting an outlet commit carrying the trigger key by {trigger['confirmBy']}"


def verdict(trigger: dict[str, Any]) -> str:
    """One line a person acts on: running, done, will retry by itself at a time, or needs them."""
    key, status = trigger.get("triggerKey"), trigger.get("status")
    if status == "FAILED" and trigger.get("failure") == "RETRYABLE":
        return f"FAILED, RETRYABLE: lakehook tries again by itself at {trigger.get('nextAttemptAt')}"
    if status == "FAILED":
        return f"FAILED, FINAL: needs you. Fix the cause, then: lakehook retry {key}"
    wait = trigger.get("waitingForSlot")
    if status == "TRIGGERING" and isinstance(wait, dict):
        return (
            f"WAITING_FOR_SLOT: #{wait.get('position') or '?'} in the queue, {wait.get('inFlight')} of maxInFlight "
            f"{wait.get('maxInFlight')} runs in flight; it starts when one ends (waiting since {wait.get('since')})"
        )
    if status == "TRIGGERING":
        return f"TRIGGERING: being dispatched (attempt {trigger.get('attempts')})"
    if status == "SUCCEEDED":
        return f"SUCCEEDED: run {trigger.get('targetRunId')} started"
    return str(status)


def trigger(api: ApiClient, args: argparse.Namespace) -> int:
    data = api.get(f"/triggers/{path_part(args.key)}")

    def text(d: dict[str, Any]) -> Iterator[str]:
        yield f"trigger {d.get('triggerKey')}"
        yield f"  {verdict(d)}"
        if d.get("status") == "FAILED":
            yield f"  reason: {d.get('reason')}  ({d.get('failureCode')}, failing since {d.get('failingSince')})"
        yield f"  rule {d.get('ruleId')} / group {d.get('groupId')}, created {d.get('createdAt')}"
        if d.get("partition") is not None:  # a partitioned group's run of one partition
            yield f"  partition: {d['partition']}"
        yield f"  attempts: {d.get('attempts')}, retries by hand: {d.get('retries', 0)}"
        for item in d.get("inputs", []):
            yield f"  input: {prose(item)}"
        if d.get("manifestUri"):
            yield f"  manifest: {d['manifestUri']}"
        state = d.get("runState")
        if isinstance(state, dict):
            detail = f": {state['detail']}" if state.get("detail") else ""
            yield f"  run state (target, {state.get('checkedAt')}): {state.get('state')}{detail}"
        if d.get("runStatus"):
            yield f"  run status (reported by the run): {d['runStatus']}"
        yield from confirmation_lines(d)
        if d.get("replayOf"):
            yield f"  replay of: {d['replayOf']}"
        if d.get("startFrom") is not None:
            yield f"  starts from: {d['startFrom']}"
        for name, value in (d.get("variables") or {}).items():
            yield f"  variable: {name} = {json.dumps(value, ensure_ascii=False)}"

    emit(args.output, data, text)
    return 0


def retry(api: ApiClient, args: argparse.Namespace) -> int:
    status, data = api.request("POST", f"/triggers/{path_part(args.key)}/retry", accept=(409,))

    def text(d: Any) -> Iterator[str]:
        if status == 409:
            yield f"retry of {args.key} refused: {d.get('message') if isinstance(d, dict) else d}"
        else:
            yield f"retry of {args.key} accepted: TRIGGERING again under the same key, with a fresh attempt budget"
            yield f"follow it with: lakehook trigger {args.key}"

    emit(args.output, data, text)
    return 1 if status == 409 else 0


def _checklist(body: Any) -> list[dict[str, Any]]:
    """The pre-flight items in a replay answer, wherever the route puts them."""
    if isinstance(body, list):
        return [i for i in body if isinstance(i, dict) and "check" in i] or [
            item for value in body for item in _checklist(value)
        ]
    if isinstance(body, dict):
        for value in body.values():
            found = _checklist(value)
            if found:
                return found
    return []


def replay_choices(start_from: str | None, assignments: list[str]) -> dict[str, Any] | None:
    """The replay's body: ``--start-from`` and ``--var NAME=VALUE`` (VALUE as JSON when it is a JSON scalar,
    else the text itself); None for a plain replay. The server checks the bounds and names what is wrong."""
    variables: dict[str, Any] = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or not name:
            raise CliError(f"--var {assignment!r}: expected NAME=VALUE")
        variables[name] = _scalar(value)
    body: dict[str, Any] = {"startFrom": start_from} if start_from is not None else {}
    if variables:
        body["variables"] = variables
    return body or None


def _scalar(text: str) -> Any:
    try:
        value = json_value(text, "--var")
    except CliError:
        return text
    return value if value is None or isinstance(value, str | int | float | bool) else text


def replay(api: ApiClient, args: argparse.Namespace) -> int:
    query = {"dryRun": True} if args.dry_run else None
    headers = request_key_header(getattr(args, "request_key", None))
    path = f"/triggers/{path_part(args.key)}/replay"
    body = replay_choices(getattr(args, "start_from", None), getattr(args, "var", None) or [])
    status, data = api.request("POST", path, query=query, body=body, headers=headers, accept=(409,))

    def text(d: Any) -> Iterator[str]:
        if status == 409:
            yield f"replay of {args.key} refused: {d.get('message') if isinstance(d, dict) else d}"
        elif args.dry_run:
            yield f"replay of {args.key} would go ahead (dry run; nothing started)"
        else:
            claimed = d.get("replay") if isinstance(d, dict) else None
            new_key = claimed.get("triggerKey") if isinstance(claimed, dict) else None
            yield f"replay of {args.key} claimed" + (f" as {new_key}" if new_key else "")
        for item in _checklist(d):
            yield f"  [{item.get('status')}] {item.get('check')} {item.get('assetKey')}: {item.get('reason')}"

    emit(args.output, data, text)
    return 1 if status == 409 else 0


def state(api: ApiClient, args: argparse.Namespace) -> int:
    data = api.get("/assets/state", query={"assetKey": args.asset})

    def text(d: dict[str, Any]) -> Iterator[str]:
        yield f"asset {d.get('assetKey')}  (state version {d.get('version')}, registered: {d.get('registered')})"
        if isinstance(d.get("sourceHealth"), dict):
            yield f"  source: {source_says(d['sourceHealth'])}"
        for key in sorted(d):
            if key == "notices" and isinstance(d[key], dict):  # notices: ARRIVING | QUIET (fast poll since …)
                yield f"  {d[key].get('summary')}, polled every {d[key].get('pollIntervalSeconds')} s"
            elif key not in ("assetKey", "version", "registered", "sourceHealth"):
                yield f"  {key}: {compact(d[key])}"

    emit(args.output, data, text)
    return 0


def coverage(api: ApiClient, args: argparse.Namespace) -> int:
    query = {"assetKey": args.asset, "start": args.start, "end": args.end, "partitionKey": args.partition}
    data = api.get("/assets/coverage", query=query)

    def text(d: dict[str, Any]) -> Iterator[str]:
        verdict = "covered" if d.get("covered") else "NOT covered"
        yield f"{d.get('assetKey')} [{d.get('start')}, {d.get('end')}): {verdict}"
        if "coveredRatio" in d:
            share = f"{d['coveredRatio'] * 100:.2f}%"
            yield f"  progress {share} ({d.get('coveredMs')} of {d.get('totalMs')} ms covered)"
        for gap in d.get("missing", []):
            yield f"  missing [{gap['start']}, {gap['end']})"

    emit(args.output, data, text)
    # Scripts gate on it: a gap is exit 3, distinct from an error (1) or an unreachable API (2).
    return 0 if data.get("covered") else 3


_PUSH_FLAGS = {
    "event_type": "eventType",
    "asset": "assetKey",
    "snapshot_id": "snapshotId",
    "sequence_number": "sequenceNumber",
    "schema_id": "schemaId",
    "watermark": "watermark",
    "commit_time": "commitTime",
    "commit_kind": "commitKind",
    "tag": "tag",
    "manifest_uri": "manifestUri",
    "backfill_id": "backfillId",
    "partition_key": "partitionKey",
}


def push_event(args: argparse.Namespace) -> dict[str, Any]:
    """The event from ``--json`` (a literal, ``@file`` or ``-`` for stdin) and the flags (flags win)."""
    event: dict[str, Any] = {}
    if args.json:
        text = args.json
        if text == "-" or text.startswith("@"):
            text = read_text("-" if text == "-" else text[1:], "--json")
        event = json_value(text, "--json")
        if not isinstance(event, dict):
            raise CliError("--json must be one event (a JSON object)")
    for flag, name in _PUSH_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            event[name] = value
    if args.interval_start or args.interval_end:
        event["interval"] = {"start": args.interval_start, "end": args.interval_end}
    if "eventType" not in event or "assetKey" not in event:
        raise CliError("an event needs an event type and an asset: --type SNAPSHOT_COMMITTED --asset <key>, or --json")
    return event


def push(api: ApiClient, args: argparse.Namespace) -> int:
    secret = args.secret or os.environ.get("LAKEHOOK_PRODUCER_SECRET")
    if not args.producer or not secret:
        raise CliError("push signs as a producer: pass --producer and --secret (or set LAKEHOOK_PRODUCER_SECRET)")
    event = push_event(args)
    try:
        expected_id = event_id(event)
    except (ValueError, KeyError, TypeError) as exc:
        raise CliError(f"invalid event: {exc}") from exc
    client = PushClient(
        api.url, args.producer, secret, max_attempts=args.attempts, backoff_seconds=0.2, timeout_seconds=api.timeout
    )
    try:
        (result,) = client.send(event)
    except PushRejectedError as exc:
        raise ApiError(exc.status, str(exc)) from exc
    except PushError as exc:
        raise UnreachableError(f"{exc}; is the API at {api.url} up? (`lakehook local up` starts one)") from exc
    data = {"eventId": result.event_id or expected_id, "status": result.status, "reason": result.reason}

    def text(d: dict[str, Any]) -> list[str]:
        why = f" ({d['reason']})" if d.get("reason") else ""
        return [f"{d['status']} {event['eventType']} {event['assetKey']} eventId={d['eventId']}{why}"]

    emit(args.output, data, text)
    return 1 if result.status == "REJECTED" else 0
