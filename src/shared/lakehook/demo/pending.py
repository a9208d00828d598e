"""What a wait of the demo is still waiting for, in lines a user reads: which runs, which rules, which assets."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from lakehook.demo.consumers import Run
from lakehook.demo.view import Board


def looked_at(board: Board, runs: Iterable[Run]) -> Hashable:
    """Everything a wait watches move: the board (assets' snapshots and quality, rules' status and why,
    triggers' status and attempts) and each run at the consumers (completed, failed, what it wrote)."""
    jobs = tuple(
        sorted((r.trigger_key, r.completed, r.error or "", r.wrote.snapshot_id if r.wrote else -1) for r in runs)
    )
    return tuple(board.assets), tuple(board.rules), tuple(board.triggers), jobs


def runs_pending(runs: Iterable[Run]) -> list[str]:
    """The runs a consumer started that have not reported completion, with the error if one failed."""
    return [
        f"run of {r.rule_id} for trigger {r.trigger_key.rsplit('.', 1)[-1][:12]}: "
        + (f"failed: {r.error}" if r.error else "started, its completion not reported yet")
        for r in runs
        if not r.completed
    ]


def chain_pending(board: Board, runs: Iterable[Run], per_rule: int) -> list[str]:
    """Each rule with fewer than ``per_rule`` runs SUCCEEDED: its triggers that are not, or (none yet) why it
    waits, naming the asset; and the runs not reported complete."""
    lines = runs_pending(runs)
    for rule, status, why in board.rules:
        triggers = [row for row in board.triggers if row[0] == rule]
        open_ = [f"  trigger {key}: {state} ({pins})" for _, key, state, pins in triggers if not _succeeded(state)]
        succeeded = len(triggers) - len(open_)
        if succeeded >= per_rule:
            continue
        lines.append(f"rule {rule}: {succeeded} of {per_rule} runs SUCCEEDED")
        lines += open_
        if len(triggers) < per_rule:
            lines.append(f"  no trigger yet: {status}" + (f", {why}" if why else ""))
    return lines


def _succeeded(state: str) -> bool:
    return state.startswith("SUCCEEDED")
