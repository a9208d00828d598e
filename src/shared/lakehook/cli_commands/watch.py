"""``lakehook watch``: follow new triggers and every change of their status, live, by polling the API.

A line per change: a trigger claimed, dispatched, retried, failed, or its run reporting its end. Triggers
that exist when the watch starts are not shown until they change. ``--count N`` ends the watch once N
triggers have settled while it ran (SUCCEEDED, FAILED for good, SKIPPED); ``--timeout`` ends it after so
many seconds (exit 3 when ``--count`` was not reached). With ``--output json`` each change is one JSON
object on its own line (the trigger as ``GET /triggers/{key}`` answers it, plus ``change``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from lakehook.cli_commands.api import ApiClient
from lakehook.cli_commands.commands import verdict
from lakehook.cli_commands.manage import pages
from lakehook.cli_commands.output import out

PER_RULE = 50  # the newest triggers of each rule looked at per poll


def signature(trigger: dict[str, Any]) -> tuple[Any, ...]:
    """What a person notices changing: status, failure kind, attempts, the run's state and its own report."""
    state = trigger.get("runState")
    return (
        trigger.get("status"),
        trigger.get("failure"),
        trigger.get("attempts"),
        state.get("state") if isinstance(state, dict) else None,
        trigger.get("runStatus"),
        (trigger.get("confirmation") or {}).get("state"),
    )


def settled(trigger: dict[str, Any]) -> bool:
    """Whether nothing more happens to it by itself (a RETRYABLE failure still does)."""
    status = trigger.get("status")
    return status in ("SUCCEEDED", "SKIPPED") or (status == "FAILED" and trigger.get("failure") != "RETRYABLE")


class Watcher:
    """Remembers what each trigger looked like; ``poll`` answers the triggers that are new or changed."""

    def __init__(self, fetch: Callable[[], list[dict[str, Any]]]) -> None:
        self._fetch = fetch
        self._seen: dict[str, tuple[Any, ...]] = {}

    def baseline(self) -> set[str]:
        """Remember the triggers there are now; answer those already settled."""
        found = self._fetch()
        self._seen = {t["triggerKey"]: signature(t) for t in found}
        return {t["triggerKey"] for t in found if settled(t)}

    def poll(self) -> list[tuple[str, dict[str, Any]]]:
        changes: list[tuple[str, dict[str, Any]]] = []
        for trigger in sorted(self._fetch(), key=lambda t: str(t.get("createdAt", ""))):
            key, now = trigger["triggerKey"], signature(trigger)
            before = self._seen.get(key)
            if before != now:
                changes.append(("new" if before is None else "changed", trigger))
                self._seen[key] = now
        return changes


def fetcher(api: ApiClient, rule: str | None) -> Callable[[], list[dict[str, Any]]]:
    def fetch() -> list[dict[str, Any]]:
        rules = [rule] if rule else [r["ruleId"] for r in pages(api, "/rules")]
        found: list[dict[str, Any]] = []
        for rule_id in rules:
            found += api.get("/triggers", query={"ruleId": rule_id, "limit": PER_RULE}).get("items", [])
        return found

    return fetch


def line(change: str, trigger: dict[str, Any]) -> str:
    inputs = ", ".join(f"{i.get('assetKey')}@{i.get('snapshotId', '-')}" for i in trigger.get("inputs", []))
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    text = f"{stamp} {trigger.get('ruleId')} {trigger['triggerKey']}: {verdict(trigger)}"
    if trigger.get("runStatus"):
        text += f"; the run reported {trigger['runStatus']}"
    if change == "new":
        text += f"  [{inputs}]"
    elif trigger.get("status") == "FAILED" and trigger.get("reason"):
        text += f"  ({trigger['reason']})"
    return text


def watch(api: ApiClient, args: argparse.Namespace) -> int:
    watcher = Watcher(fetcher(api, args.rule))
    already = watcher.baseline()
    stream = out()
    if args.output != "json":
        what = f"rule {args.rule}" if args.rule else "every rule"
        print(f"watching {what} (every {args.interval:g} s; Ctrl-C stops)", file=stream, flush=True)
    deadline = time.monotonic() + args.timeout if args.timeout else None
    done: set[str] = set()
    try:
        while True:
            for change, trigger in watcher.poll():
                if args.output == "json":
                    stream.write(json.dumps({**trigger, "change": change}, sort_keys=True) + "\n")
                else:
                    print(line(change, trigger), file=stream)
                stream.flush()
                if settled(trigger) and trigger["triggerKey"] not in already:
                    done.add(trigger["triggerKey"])
            if args.count and len(done) >= args.count:
                return 0
            if deadline is not None and time.monotonic() >= deadline:
                return 3 if args.count else 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
