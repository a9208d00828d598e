"""Resource commands: rules, assets, producers, aliases, watermarks, run completion, evaluate now.

Each is one API route (see docs/api.md); text output for people, ``--output json`` the route's answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lakehook.cli_commands.api import ApiClient, CliError, path_part, request_key_header
from lakehook.cli_commands.inputs import json_value
from lakehook.cli_commands.output import emit, emit_items, table
from lakehook.domain.signing import IAM_PREFIX


def pages(api: ApiClient, path: str, query: dict[str, Any] | None = None, limit: int | None = None) -> list[Any]:
    """Every item of a paged listing (``items`` + ``nextToken``), at most ``limit``."""
    items: list[Any] = []
    token: str | None = None
    while limit is None or len(items) < limit:
        page = api.get(path, query={**(query or {}), "limit": min(limit or 500, 500), "nextToken": token})
        items += page.get("items", [])
        token = page.get("nextToken")
        if not token:
            break
    return items if limit is None else items[:limit]


def list_pages(
    api: ApiClient,
    args: argparse.Namespace,
    path: str,
    headers: Sequence[str],
    row: Callable[[dict[str, Any]], Sequence[Any]],
    empty: str,
    query: dict[str, Any] | None = None,
) -> int:
    """A list command: every page of ``path`` (at most ``--limit`` items), one table row per item."""
    emit_items(args.output, pages(api, path, query, limit=args.limit), headers, row, empty)
    return 0


def confirm(args: argparse.Namespace, question: str) -> bool:
    """``--yes``, or a ``y`` typed at a terminal; a script without ``--yes`` is refused, not blocked."""
    if getattr(args, "yes", False):
        return True
    if not sys.stdin.isatty():
        raise CliError(f"{question} needs confirmation: pass --yes (stdin is not a terminal)")
    answer = input(f"{question} [y/N] ")
    return answer.strip().lower() in ("y", "yes")


# --- rules -----------------------------------------------------------------------------------------


def _rule_row(r: dict[str, Any]) -> tuple[Any, ...]:
    return (
        r.get("ruleId"),
        "yes" if r.get("enabled", True) else "no",
        (r.get("target") or {}).get("type"),
        len(r.get("groups", [])),
        (r.get("policy") or {}).get("mode"),
        "error" if r.get("lastError") else "",
        r.get("description") or "",
    )


def rules_list(api: ApiClient, args: argparse.Namespace) -> int:
    headers = ("RULE", "ENABLED", "TARGET", "GROUPS", "MODE", "ERROR", "DESCRIPTION")
    return list_pages(api, args, "/rules", headers, _rule_row, "no rules")


def rules_get(api: ApiClient, args: argparse.Namespace) -> int:
    data = api.get(f"/rules/{path_part(args.rule)}")
    emit(args.output, data, lambda d: json.dumps(d, indent=2, sort_keys=True).splitlines())
    return 0


def rules_delete(api: ApiClient, args: argparse.Namespace) -> int:
    api.get(f"/rules/{path_part(args.rule)}")  # a 404 before asking anything
    if not confirm(args, f"delete rule {args.rule} (its triggers stay)?"):
        emit(args.output, {"ruleId": args.rule, "deleted": False}, lambda d: [f"rule {args.rule} kept"])
        return 1
    data = api.request("DELETE", f"/rules/{path_part(args.rule)}")[1]
    emit(args.output, data, lambda d: [f"deleted rule {args.rule} (its triggers stay)"])
    return 0


def evaluate(api: ApiClient, args: argparse.Namespace) -> int:
    options = {
        "force": True if args.force else None,
        "groupId": getattr(args, "group", None),
        "partition": getattr(args, "partition", None),
    }
    body = {k: v for k, v in options.items() if v is not None} or None
    key = getattr(args, "request_key", None)
    headers = request_key_header(key) if args.force or key is not None else None
    data = api.request("POST", f"/rules/{path_part(args.rule)}/evaluate", body=body, headers=headers)[1]

    def text(d: dict[str, Any]) -> Iterator[str]:
        claimed = d.get("claimed") or []
        verdict = "READY" if d.get("ready") else "NOT READY"
        manual = " (a manual run)" if d.get("manual") else ""
        yield f"rule {args.rule}: {verdict}; claimed {len(claimed)} trigger(s){manual}"
        for key in claimed:
            yield f"  {key}"
        for group in d.get("groups", []):
            yield f"  group {group.get('groupId')}: {group.get('status')}"
        if claimed:
            yield f"follow them with: lakehook watch --rule {args.rule}"

    emit(args.output, data, text)
    return 0


# --- assets ----------------------------------------------------------------------------------------


def assets_list(api: ApiClient, args: argparse.Namespace) -> int:
    def row(a: dict[str, Any]) -> tuple[Any, ...]:
        found = a.get("sourceHealth")
        health: dict[str, Any] = found if isinstance(found, dict) else {}
        polled = "yes" if a.get("source") else "no"
        return a.get("assetKey"), a.get("format"), polled, health.get("state", "-"), health.get("since", "")

    headers = ("ASSET", "FORMAT", "POLLED", "HEALTH", "SINCE")
    return list_pages(api, args, "/assets", headers, row, "no registered assets")


def _event_row(e: dict[str, Any]) -> tuple[Any, ...]:
    return (
        e.get("receivedAt"),
        e.get("eventType"),
        e.get("snapshotId", e.get("watermark", e.get("tag", "-"))),
        e.get("source"),
        e.get("producerId") or "-",
        e.get("eventId"),
    )


def assets_events(api: ApiClient, args: argparse.Namespace) -> int:
    headers = ("RECEIVED", "TYPE", "VERSION", "SOURCE", "PRODUCER", "EVENT ID")
    empty = f"no events recorded for {args.asset}"
    ranges = {"start": args.start, "end": args.end, "fromVersion": args.from_version, "toVersion": args.to_version}
    query = {"assetKey": args.asset, **{name: value for name, value in ranges.items() if value is not None}}
    if len(query) > 1:
        empty = f"no events of {args.asset} in that range"
    return list_pages(api, args, "/assets/events", headers, _event_row, empty, query)


# --- producers and aliases -------------------------------------------------------------------------


def _producer_text(d: dict[str, Any]) -> Iterator[str]:
    yield f"producer {d.get('producerId')}  (secret in {d.get('secretRef')}, updated {d.get('updatedAt')})"
    yield f"  prefixes: {', '.join(d.get('assetKeyPrefixes') or []) or '-'}"
    for mapping in d.get("lineageDatasets") or []:
        name = f"{mapping.get('namespace')}/{mapping.get('namePrefix') or ''}*"
        yield f"  lineage: {name} -> {mapping.get('assetKeyPrefix')}*"
    if d.get("secret"):
        yield f"  secret (shown once, store it now): {d['secret']}"
    if d.get("apiKey"):
        taken = "" if d.get("lineageBearer") else "; taken only once the producer has lineageBearer: true"
        yield f"  OpenLineage api_key (the same secret{taken}): {d['apiKey']}"


def producers_list(api: ApiClient, args: argparse.Namespace) -> int:
    def row(p: dict[str, Any]) -> tuple[Any, ...]:
        return p.get("producerId"), ", ".join(p.get("assetKeyPrefixes") or []), p.get("updatedAt")

    return list_pages(api, args, "/producers", ("PRODUCER", "PREFIXES", "UPDATED"), row, "no producers")


def producers_get(api: ApiClient, args: argparse.Namespace) -> int:
    emit(args.output, api.get(f"/producers/{path_part(args.producer)}"), _producer_text)
    return 0


def producers_rotate(api: ApiClient, args: argparse.Namespace) -> int:
    current = api.get(f"/producers/{path_part(args.producer)}")
    if not confirm(args, f"rotate the secret of producer {args.producer} (its writers need the new one)?"):
        return 1
    # A PUT replaces the producer: send back all it has, so a rotation changes the secret and nothing else.
    kept = ("assetKeyPrefixes", "description", "lineageDatasets", "eventSources", "lineageBearer")
    spec = {k: current[k] for k in kept if current.get(k) is not None}
    path = f"/producers/{path_part(args.producer)}"
    data = api.request("PUT", path, query={"rotateSecret": True}, body=spec)[1]
    emit(args.output, data, _producer_text)
    return 0


def aliases_list(api: ApiClient, args: argparse.Namespace) -> int:
    def row(a: dict[str, Any]) -> tuple[Any, ...]:
        return a.get("name"), ", ".join(a.get("assetKeys") or [])

    return list_pages(api, args, "/aliases", ("ALIAS", "ASSETS"), row, "no aliases")


def aliases_get(api: ApiClient, args: argparse.Namespace) -> int:
    data = api.get(f"/aliases/{path_part(args.name)}")
    emit(args.output, data, lambda d: [f"alias {d.get('name')} -> {', '.join(d.get('assetKeys') or [])}"])
    return 0


# --- watermarks ------------------------------------------------------------------------------------


def _watermark_rows(items: list[dict[str, Any]]) -> list[str]:
    if not items:
        return ["no watermarks"]
    rows = [(w.get("key"), w.get("version"), w.get("updatedAt"), json.dumps(w.get("value"))) for w in items]
    return table(("KEY", "VERSION", "UPDATED", "VALUE"), rows)


def _watermarks(api: ApiClient) -> str:
    """GET and PUT /watermarks take a producer's signature too, so on AWS their methods have no IAM authorizer:
    management credentials (SigV4) go to the IAM variant, which sees them."""
    return IAM_PREFIX + "/watermarks" if api.uses_sigv4 else "/watermarks"


def watermarks_get(api: ApiClient, args: argparse.Namespace) -> int:
    query = {"namespace": args.namespace, "assetKey": args.asset, "key": args.key}
    data = api.get(_watermarks(api), query=query)
    emit(args.output, data, lambda d: _watermark_rows(d.get("items", [d])))
    return 0


def watermarks_put(api: ApiClient, args: argparse.Namespace) -> int:
    try:
        value = json_value(args.value, "--value")
    except CliError as exc:
        hint = " (--value is JSON: quote a string, '\"abc\"')" if "not valid JSON" in str(exc) else ""
        raise CliError(f"{exc}{hint}") from exc
    body: dict[str, Any] = {"namespace": args.namespace, "assetKey": args.asset, "key": args.key, "value": value}
    if args.expected_version is not None:
        body["expectedVersion"] = args.expected_version
    data = api.request("PUT", _watermarks(api), body=body)[1]
    emit(args.output, data, lambda d: _watermark_rows([d]))
    return 0


def watermarks_delete(api: ApiClient, args: argparse.Namespace) -> int:
    query = {
        "namespace": args.namespace,
        "assetKey": args.asset,
        "key": args.key,
        "expectedVersion": args.expected_version,
    }
    data = api.request("DELETE", "/watermarks", query=query)[1]
    emit(args.output, data, lambda d: [f"deleted watermark {args.namespace}/{args.asset}/{args.key}"])
    return 0


# --- run completion --------------------------------------------------------------------------------


def outlet(text: str) -> dict[str, Any]:
    """One ``--outlet``: an event as JSON, or ``ASSET=SNAPSHOT`` for a committed snapshot."""
    if text.lstrip().startswith("{"):
        try:
            value = json_value(text, "the outlet")
        except CliError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc
        if not isinstance(value, dict):
            raise argparse.ArgumentTypeError("an outlet must be a JSON object")
        return value
    asset, sep, snapshot = text.rpartition("=")
    if not sep or not asset or not snapshot.isdigit():
        raise argparse.ArgumentTypeError("expected ASSET=SNAPSHOT_ID or an event as JSON")
    return {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": int(snapshot)}


def complete(api: ApiClient, args: argparse.Namespace) -> int:
    body = {"status": args.status, "outlets": args.outlets or []}
    headers = {"X-Lakehook-Completion-Token": args.token} if args.token else None
    path = f"/runs/{path_part(args.key)}/complete"
    if api.uses_sigv4 and not args.token:  # management credentials on AWS: the route's IAM variant sees them
        path = IAM_PREFIX + path
    data = api.request("POST", path, body=body, headers=headers)[1]

    def text(d: dict[str, Any]) -> Iterator[str]:
        repeated = " (already recorded: the same completion again)" if d.get("repeated") else ""
        yield f"run of {args.key}: {d.get('status', args.status)}{repeated}"
        for result in d.get("results") or []:
            why = f" ({result['reason']})" if result.get("reason") else ""
            yield f"  outlet {result.get('status')} {result.get('eventId')}{why}"

    emit(args.output, data, text)
    return 0
