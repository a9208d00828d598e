"""A downstream member that requires confirmed inputs (``confirmationStatus: CONFIRMED``, docs/rules.md): it holds only
while the version it pins is a commit that confirmed the run which wrote it. On the in-memory fakes of our own ports:
the rule's validation, the condition on a state, and the whole path (a poll's commit carrying a trigger key ->
ConfirmRuns -> the outlet's state -> the downstream member's verdict)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lakehook.domain.conditions import ConfirmedInput, conditions_of
from lakehook.domain.json_form import json_form
from lakehook.domain.member_selection import select_member
from lakehook.domain.rules import Member, Rule
from lakehook.domain.snapshots import SnapshotInfo, snapshot_event
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.usecases.confirmation import ConfirmOutcome, ConfirmRuns
from lakehook.usecases.ingest_state import advance_state
from tests.fakes.memory import InMemoryAssetStore
from tests.hypothesis_profiles import examples
from tests.unit.test_dispatch_usecase import T0, WEBHOOK, World, make_world
from tests.unit.test_run_confirmation import OUTLET, confirmed_rule, started

DOWNSTREAM = {"assetKey": OUTLET, "condition": {"confirmationStatus": "CONFIRMED"}}


def member(**condition: Any) -> Member:
    return Member.model_validate({"assetKey": OUTLET, "condition": condition})


def downstream_rule(mode: str = "ALL_UPDATED", **condition: Any) -> dict[str, Any]:
    return {
        "ruleId": "dws",
        "groups": [{"groupId": "g", "members": [{"assetKey": OUTLET, "condition": condition}]}],
        "target": WEBHOOK,
        "policy": {"mode": mode},
    }


# --- written and checked when the rule is written -----------------------------------------------------------------


def test_the_condition_is_checked_when_the_rule_is_written() -> None:
    assert json_form(member(confirmationStatus="CONFIRMED").condition)["confirmationStatus"] == "CONFIRMED"
    with pytest.raises(ValidationError, match="confirmationStatus"):
        member(confirmationStatus="PASSED")
    with pytest.raises(ValidationError, match="confirmationStatus"):
        member(confirmationStatus=True)
    with pytest.raises(ValidationError, match="a compaction never confirms a run"):
        member(confirmationStatus="CONFIRMED", includeCompaction=True)
    with pytest.raises(ValidationError, match="a spooled asset"):
        Member.model_validate(
            {"assetKey": "s3://spool/orders", "condition": {"confirmationStatus": "CONFIRMED", "manifest": "SEALED"}}
        )
    with pytest.raises(ValidationError, match="EACH_VERSION steps through older versions"):
        Rule.model_validate(downstream_rule("EACH_VERSION", confirmationStatus="CONFIRMED"))
    Rule.model_validate(downstream_rule("ALL_UPDATED", confirmationStatus="CONFIRMED"))
    assert member().condition.confirmation_status is None and ConfirmedInput.of(member()) is None
    assert any(isinstance(c, ConfirmedInput) for c in conditions_of(member(confirmationStatus="CONFIRMED")))


# --- the condition on a state --------------------------------------------------------------------------------------


def state(**fields: Any) -> AssetState:
    return AssetState(asset_key=OUTLET, version=3, **fields)


@given(
    latest=st.integers(1, 50),
    confirmed=st.none() | st.integers(1, 50),
    compaction_on_top=st.booleans(),
)
@settings(max_examples=examples(200), deadline=None)
def test_the_member_holds_exactly_when_its_version_is_the_confirmed_commit(
    latest: int, confirmed: int | None, compaction_on_top: bool
) -> None:
    """Reference: the version is the newest data commit (a compaction on top is passed over); READY iff the state's
    confirmed commit is that version; else BLOCKED_BY_CONFIRMATION naming the version and the last confirmed run."""
    if confirmed is not None:
        confirmed = min(confirmed, latest)
    data = {"snapshotId": latest, "order": latest, "commitKind": "APPEND"}
    fields: dict[str, Any] = {"latest_snapshot_id": latest, "latest_snapshot_order": latest, "latest_data": data}
    if compaction_on_top:
        fields.update(latest_snapshot_id=latest + 1, latest_snapshot_order=latest + 1, latest_commit_kind="REPLACE")
    if confirmed is not None:
        fields.update(confirmed_snapshot_id=confirmed, confirmed_order=confirmed, confirmed_trigger_key="dwd.g.k1")
    verdict = select_member(member(confirmationStatus="CONFIRMED"), state(**fields))
    if confirmed == latest:
        assert verdict.status is Status.READY and verdict.pin is not None and verdict.pin.snapshot_id == latest
        assert verdict.current["confirmedTriggerKey"] == "dwd.g.k1"
        return
    assert verdict.status is Status.BLOCKED_BY_CONFIRMATION and verdict.pin is None
    assert verdict.reason is not None and f"snapshot {latest} was not written by a confirmed run" in verdict.reason
    last = "no commit of this table has confirmed a run yet" if confirmed is None else f"snapshot {confirmed}, written"
    assert last in verdict.reason
    if confirmed is not None:
        assert "trigger dwd.g.k1" in verdict.reason


# --- the whole path on the fakes ----------------------------------------------------------------------------------


def commit(key: str | None, snapshot: int, kind: str = "APPEND") -> SnapshotInfo:
    return SnapshotInfo(
        snapshot_id=1000 + snapshot,
        sequence_number=snapshot,
        commit_time=T0 + snapshot,
        commit_kind=kind,
        trigger_key=key,
    )


class Outlet:
    """The outlet table as the poll feeds it: each commit ingested, then handed to ConfirmRuns (as PollAsset does)."""

    def __init__(self, world: World) -> None:
        self.assets = InMemoryAssetStore()
        self.confirm = ConfirmRuns(world.ledger, world.rules, clock=world.clock.ms, assets=self.assets)
        self.woken = 0

    def polled(self, *commits: SnapshotInfo) -> list[ConfirmOutcome]:
        for snapshot in commits:
            advance_state(self.assets, snapshot_event(OUTLET, snapshot), T0)
        before = self.assets.get_state(OUTLET)
        outcomes = [r.outcome for r in self.confirm(OUTLET, list(commits))]
        after = self.assets.get_state(OUTLET)
        self.woken += int(before is not None and after is not None and after.version != before.version)
        return outcomes

    def verdict(self) -> tuple[Status, int | None, str | None]:
        found = select_member(Member.model_validate(DOWNSTREAM), self.assets.get_state(OUTLET))
        return found.status, found.pin.snapshot_id if found.pin else None, found.reason


@pytest.fixture
def world() -> World:
    made = make_world()
    made.rules.put_rule(confirmed_rule(), T0)
    return made


def test_a_confirmed_runs_commit_lets_the_downstream_member_pin_it_and_a_foreign_commit_blocks_it(world: World) -> None:
    outlet = Outlet(world)
    key = started(world, 1)
    assert outlet.polled(commit(None, 1)) == []  # a commit without a key: nothing is confirmed
    status, _, reason = outlet.verdict()
    assert status is Status.BLOCKED_BY_CONFIRMATION
    assert "no commit of this table has confirmed a run yet" in (reason or "")

    assert outlet.polled(commit(key, 2)) == [ConfirmOutcome.CONFIRMED]
    assert outlet.woken == 1  # the state's write is what wakes the rules reading the outlet
    assert outlet.verdict() == (Status.READY, 1002, None)

    assert outlet.polled(commit(key, 3, kind="REPLACE")) == [ConfirmOutcome.NO_DATA_CHANGE]
    assert outlet.verdict() == (Status.READY, 1002, None)  # a compaction on top changes nothing

    assert outlet.polled(commit(None, 4)) == []  # a foreign writer's commit: the newest version is not confirmed
    status, pin, reason = outlet.verdict()
    assert (status, pin) == (Status.BLOCKED_BY_CONFIRMATION, None)
    assert "snapshot 1004 was not written by a confirmed run" in (reason or "")
    assert f"the last confirmed one is snapshot 1002, written by trigger {key}" in (reason or "")

    other = started(world, 2)
    assert outlet.polled(commit(other, 5)) == [ConfirmOutcome.CONFIRMED]
    assert outlet.verdict() == (Status.READY, 1005, None)


def test_a_late_or_redelivered_confirmation_never_moves_the_confirmed_commit_back(world: World) -> None:
    outlet = Outlet(world)
    first, second = started(world, 1), started(world, 2)
    assert outlet.polled(commit(second, 6)) == [ConfirmOutcome.CONFIRMED]
    assert outlet.polled(commit(first, 3)) == [ConfirmOutcome.CONFIRMED]  # an older commit's key, seen late
    assert outlet.polled(commit(second, 6)) == [ConfirmOutcome.ALREADY]  # the commit redelivered
    confirmed = outlet.assets.get_state(OUTLET)
    assert confirmed is not None
    assert (confirmed.confirmed_snapshot_id, confirmed.confirmed_trigger_key) == (1006, second)


def test_a_commit_to_a_table_that_is_not_an_outlet_confirms_nothing_downstream(world: World) -> None:
    outlet = Outlet(world)
    key = started(world, 1)
    scratch = "iceberg://lake/tmp/scratch"
    advance_state(outlet.assets, snapshot_event(scratch, commit(key, 1)), T0)
    assert [r.outcome for r in outlet.confirm(scratch, [commit(key, 1)])] == [ConfirmOutcome.NOT_AN_OUTLET]
    scratch_state = outlet.assets.get_state(scratch)
    assert scratch_state is not None and scratch_state.confirmed_snapshot_id is None
    found = select_member(Member.model_validate({**DOWNSTREAM, "assetKey": scratch}), scratch_state)
    assert found.status is Status.BLOCKED_BY_CONFIRMATION
    assert f"its commit carried trigger {key}, which it does not confirm: the table is not among the outlets" in (
        found.reason or ""
    )


def test_the_verdict_names_the_trigger_a_commit_carried_and_why_it_confirmed_nothing(world: World) -> None:
    outlet = Outlet(world)
    key = started(world, 1)
    assert outlet.polled(commit(key, 1)) == [ConfirmOutcome.CONFIRMED]
    unknown = "dwd.g.000000000000000000000099"
    assert outlet.polled(commit(unknown, 2)) == [ConfirmOutcome.NO_TRIGGER]  # a key no trigger has: a hand-set one
    status, pin, reason = outlet.verdict()
    assert (status, pin) == (Status.BLOCKED_BY_CONFIRMATION, None)
    assert f"its commit carried trigger {unknown}, which it does not confirm: no trigger of that key had a run" in (
        reason or ""
    )
    assert f"the last confirmed one is snapshot 1001, written by trigger {key}" in (reason or "")
    assert outlet.polled(commit(None, 3)) == []  # a commit with no key at all: the generic reason
    _, _, reason = outlet.verdict()
    assert "its commit carried no trigger key that confirmed one" in (reason or "")
