"""One partition's verdict against a model of docs/partitions.md ("When a partition runs"): what blocks first is the
rule disabled, then a gate, then a member no commit of which touched the partition, then the policy against the
partition's cursor, then its cooldown, then the quiet period; READY pins every member."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.evaluation import evaluate_group
from lakehook.domain.partition_evaluation import PartitionFact, mapping_of, partition_view
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, trigger_key
from lakehook.usecases.rules import parse_rule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_rules import DAY, DIM, ORDERS, PAYMENTS, body

NOW = 1_800_000_000_000
PARTITIONED = (ORDERS, PAYMENTS)


def rule_of(enabled: bool, mode: str, interval: int, quiet: int) -> Any:
    members = [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, {"assetKey": DIM}]
    policy = {"mode": mode, "minIntervalSeconds": interval, "quietPeriodSeconds": quiet}
    return parse_rule("r", {**body(members=members), "enabled": enabled, "policy": policy})


def cursor_of(ran: dict[str, int], claimed_at: int) -> GroupCursor | None:
    if not ran:
        return None
    pins = tuple(PinnedInput(asset_key=a, snapshot_id=o) for a, o in ran.items())
    key = trigger_key("r", "daily", pins, None, 0, partition=DAY)
    trigger = Trigger(
        triggerKey=key, ruleId="r", groupId="daily", inputs=pins, partition=DAY, createdAt=claimed_at, updatedAt=1
    )
    return GroupCursor.initial("r", "daily", DAY).after(trigger, {})


orders = st.sampled_from([None, 1, 2, 3, 4, 5, 6])


@settings(max_examples=examples(300), deadline=None)
@given(
    enabled=st.sampled_from([True, True, True, False]),
    mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"]),
    interval=st.sampled_from([0, 60]),
    quiet=st.sampled_from([0, 30]),
    facts=st.tuples(orders, orders),
    ran=st.tuples(orders, orders),
    gate=st.sampled_from([True, True, True, False]),
    claimed_ago=st.integers(0, 120_000),
    changed_ago=st.integers(0, 60_000),
)
def test_the_verdict_is_the_first_thing_that_blocks_in_the_documented_order(
    enabled: bool,
    mode: str,
    interval: int,
    quiet: int,
    facts: tuple[int | None, int | None],
    ran: tuple[int | None, int | None],
    gate: bool,
    claimed_ago: int,
    changed_ago: int,
) -> None:
    rule = rule_of(enabled, mode, interval, quiet)
    group = rule.groups[0]
    known = {}
    for asset, order in zip(PARTITIONED, facts, strict=True):
        if order is not None:
            member = next(m for m in group.members if m.asset_key == asset)
            fact = PartitionFact(asset, mapping_of(group, member), DAY, order, order)
            known[fact.key] = fact
    pinned = {a: o for a, o in zip(PARTITIONED, ran, strict=True) if o is not None}
    cursor = cursor_of(pinned, NOW - claimed_ago)
    changed = NOW - changed_ago
    states = {DIM: AssetState(assetKey=DIM, latestSnapshotId=40, version=1, updatedAt=changed)} if gate else {}
    registered = {DIM: True, ORDERS: True}
    view, judged = partition_view(rule, group, DAY, known, states, cursor, registered)
    verdict = evaluate_group(rule, group, states, judged, NOW, registered=registered, partition=view)

    # the model
    have = dict(zip(PARTITIONED, facts, strict=True))
    newer = [a for a in PARTITIONED if have[a] is not None and (a not in pinned or have[a] > pinned[a])]  # type: ignore[operator]
    older = [a for a in PARTITIONED if have[a] is not None and a in pinned and have[a] < pinned[a]]  # type: ignore[operator]
    ends = (NOW - claimed_ago) + interval * 1000
    expected: tuple[Status, int | None]
    if not enabled:
        expected = (Status.DISABLED, None)
    elif not gate:  # registered, with no state yet: the gate's own status
        gate_status = verdict.members[2].status
        assert gate_status is not Status.READY and verdict.members[2].asset_key == DIM
        expected = (gate_status, None)
    elif None in facts:
        expected = (Status.WAITING_FOR_PARTITION, None)
    elif not (newer and not older if mode == "ANY_UPDATED" else len(newer) == 2):
        expected = (Status.WAITING_FOR_UPDATE, None)
    elif cursor is not None and interval and ends > NOW:
        expected = (Status.COOLDOWN, ends)
    elif quiet and changed + quiet * 1000 > NOW:
        expected = (Status.QUIET_PERIOD, changed + quiet * 1000)
    else:
        expected = (Status.READY, None)
    assert (verdict.status, verdict.until) == expected, verdict.reason
    assert verdict.partition == DAY and (verdict.reason or "").startswith(f"{DAY}: ")
    if verdict.status is Status.COOLDOWN:
        assert cursor is not None and cursor.claimed_at is not None
        assert f"last ran at {ms_to_iso(cursor.claimed_at)}; minIntervalSeconds is {interval}" in (verdict.reason or "")
    if verdict.status is Status.QUIET_PERIOD:
        assert f"a member changed at {ms_to_iso(changed)}; quietPeriodSeconds is {quiet}" in (verdict.reason or "")
    if verdict.ready:
        assert [(p.asset_key, p.snapshot_id) for p in verdict.pins] == [
            (ORDERS, facts[0]),
            (PAYMENTS, facts[1]),
            (DIM, 40),
        ]
    else:
        assert verdict.pins == ()
