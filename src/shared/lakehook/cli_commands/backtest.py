"""``lakehook backtest RULE [-f rule.yaml] [--from ...] [--to ...]``: a rule tried on the stored event history
(``POST /rules/{ruleId}/backtest``): the runs it would have started, and what it would be waiting for now."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from lakehook.cli_commands.api import ApiClient, path_part
from lakehook.cli_commands.inputs import read_text, yaml_document
from lakehook.cli_commands.output import emit
from lakehook.cli_commands.prose import prose


def backtest(api: ApiClient, args: argparse.Namespace) -> int:
    options = {"from": args.start, "to": args.end}
    body: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    if args.file is not None:
        body["rule"] = yaml_document(read_text(args.file, "the rule"), args.file)
    data = api.request("POST", f"/rules/{path_part(args.rule)}/backtest", body=body)[1]
    emit(args.output, data, _text)
    return 0


def _text(data: dict[str, Any]) -> Iterator[str]:
    history = data.get("history") or {}
    runs = data.get("runs") or []
    yield (
        f"rule {data.get('ruleId')} on the history from {data.get('from')} to {data.get('to')}: "
        f"{len(runs)} run(s) it would have started"
    )
    yield (
        f"  replayed {history.get('eventsRead')} event(s) ({history.get('eventsBeforeFrom')} before from), "
        f"{history.get('queries')} queries; events are kept {history.get('eventRetentionDays')} days "
        f"(since {history.get('keptFrom')})"
    )
    yield from _run_lines(runs)
    yield from _waiting_lines(data.get("waitingNow") or {})
    for error in data.get("errors") or []:
        yield f"  error: {error}"


def _run_lines(runs: list[dict[str, Any]]) -> Iterator[str]:
    """Each run the rule would have started, with the versions it would have pinned."""
    for run in runs:
        partition = f" partition {run['partition']}" if run.get("partition") else ""
        yield f"  {run.get('createdAt')} {run.get('triggerKey')} {run.get('status')}{partition}"
        for pinned in run.get("inputs") or []:
            yield f"    pinned {prose(pinned)}"


def _waiting_lines(waiting: dict[str, Any]) -> Iterator[str]:
    """Whether the rule is ready now, and each group's and member's status."""
    yield f"  now: {'READY' if waiting.get('ready') else 'NOT READY'}"
    for group in waiting.get("groups") or []:
        yield f"    group {group.get('groupId')}: {group.get('status')}"
        for member in group.get("members") or []:
            reason = f" ({member['reason']})" if member.get("reason") else ""
            yield f"      {member.get('assetKey')}: {member.get('status')}{reason}"
