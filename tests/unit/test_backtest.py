"""Backtest (``usecases.backtest``): a rule tried on the stored event history lists exactly the claims that applying
it at ``from`` and replaying the same history live makes, key for key; its input is checked as a PUT's; nothing is
written to the stack's stores."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook import container
from lakehook.api.app import build_app
from lakehook.cli import build_parser
from lakehook.cli_commands import backtest
from lakehook.cli_commands.api import ApiClient, ApiError
from lakehook.cli_commands.output import captured
from lakehook.container import Container
from lakehook.domain.errors import NotFoundError, ValidationError
from lakehook.domain.events import AssetEvent, EventType, IngestStatus, SourceType
from lakehook.domain.json_form import json_form
from lakehook.domain.state import snapshot_record
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import TriggerStatus
from lakehook.ports.rules import AssetRecheck, Deferral, StateChange
from lakehook.settings import Settings
from lakehook.usecases.backtest import DAY_MS, BacktestRule
from lakehook.usecases.late_versions import LateSnapshotNotice
from lakehook.usecases.resolve import ResolverStores, SweepDeferred
from lakehook.usecases.rule_writes import PutRule
from tests import wiring
from tests.fakes.memory import InMemoryAssetStore
from tests.fakes.memory_partitions import InMemoryPartitionStore
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from tests.hypothesis_profiles import examples
from tests.support import FakeLambdaContext, api_event
from tests.wiring import ingest_events, resolve_asset_change

A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"
T0 = 1_750_000_000_000
TARGET = {"type": "eventbridge", "eventBusName": "lakehook-runs"}
TOKEN = "backtest-admin"


def rule_body(mode: str, *, partitioned: bool = False, **policy: Any) -> dict[str, Any]:
    """A (its quality checked) and B; ``partitioned``: once per ``dt`` partition their commits touch (a partitioned
    member's version is its newest commit touching the partition: no quality condition there)."""
    each: dict[str, Any] = {"partition": {}} if partitioned else {"condition": {"qualityStatus": "PASSED"}}
    members = [{"assetKey": A, **each}, {"assetKey": B, **({"partition": {}} if partitioned else {})}]
    group: dict[str, Any] = {"groupId": "g", "members": members, **({"partitionBy": ["dt"]} if partitioned else {})}
    return {"target": TARGET, "policy": {"mode": mode, **policy}, "groups": [group]}


@dataclass
class Live:
    """The rule applied and the history replayed live: the real ingest, PUT and resolver on the fakes, a stream that
    delivers each record as it is written, a sweep at each deferral's due time, and every run finishing at once."""

    now: int = T0
    assets: InMemoryAssetStore = field(default_factory=InMemoryAssetStore)
    triggers: InMemoryTriggerStore = field(default_factory=InMemoryTriggerStore)
    rules: InMemoryRuleStore = field(default_factory=InMemoryRuleStore)
    deferrals: InMemoryDeferralStore = field(default_factory=InMemoryDeferralStore)

    def __post_init__(self) -> None:
        reader = InMemoryStateReader(self.assets.get_state, self.triggers, events=self._events)
        history = InMemoryStateHistory()
        stores = ResolverStores(
            self.rules,
            reader,
            self.triggers,
            history,
            self.deferrals,
            partitions=InMemoryPartitionStore(),
            assets=self.assets,
        )
        self.resolver = resolve_asset_change(stores, clock=lambda: self.now, observer=None)
        # as the container wires it: a late snapshot is decided for the asset's EACH_VERSION rules as it arrives
        late = LateSnapshotNotice(self.rules, self.triggers, history, clock=lambda: self.now)
        self.ingest = ingest_events(self.assets, clock=lambda: self.now, late=late)
        self.put = PutRule(self.rules, lambda: self.now, resolver=self.resolver)
        self.sweep = SweepDeferred(self.deferrals, clock=lambda: self.now)

    def _events(self) -> list[AssetEvent]:
        return [e.event for e in self.assets.events.values()]

    def wait_until(self, at: int) -> None:
        while (due := self.deferrals.due(at, 1)) and due[0].due_at <= at:
            self.now = max(self.now, due[0].due_at)
            self.deliver(deferred=self.sweep())
        self.now = max(self.now, at)

    def push(self, event: AssetEvent, at: int) -> None:
        self.wait_until(at)
        before = self.assets.get_state(event.asset_key)
        result = self.ingest.ingest(event, SourceType.PUSH)
        after = self.assets.get_state(event.asset_key)
        changes = []
        # the event item's INSERT: a duplicate's refused put makes no stream record
        if event.event_type is EventType.SNAPSHOT_COMMITTED and result.status is not IngestStatus.DUPLICATE:
            changes.append(StateChange(event.asset_key, snapshot=snapshot_record(event), partitions=event.partitions))
        if after is not None and (before is None or after.version != before.version):
            changes.append(StateChange(event.asset_key, after))
        self.deliver(changes)

    def deliver(self, changes: list[StateChange] | None = None, deferred: Any = ()) -> None:
        before = len(self.triggers.claim_order)
        self.resolver(changes or [], list(deferred))
        self.run_all(before)

    def run_all(self, before: int) -> None:
        woken: list[Deferral | AssetRecheck] = []
        for key in self.triggers.claim_order[before:]:
            trigger = self.triggers.triggers[key]
            if trigger.status is TriggerStatus.TRIGGERING:
                self.triggers.triggers[key] = trigger.model_copy(update={"status": TriggerStatus.SUCCEEDED})
                woken.append(Deferral(trigger.rule_id, trigger.group_id, 0))
        if woken:
            self.deliver(deferred=woken)

    def apply(self, body: dict[str, Any], at: int) -> None:
        self.wait_until(at)
        before = len(self.triggers.claim_order)
        self.put.put("r", body)
        self.run_all(before)


# asset, snapshot, quality passed (A), wait in ms before it: at least 2 (the verdict comes 1 ms after its snapshot),
# as the events index orders events received in the same millisecond by id, not as they came; and the day of the
# dt partition the commit touches
Step = tuple[str, int, bool, int] | tuple[str, int, bool, int, int]


def history(steps: list[Step]) -> list[tuple[AssetEvent, int]]:
    at, events = T0, []
    for asset, snapshot, passed, wait, *day in steps:
        at += wait
        touched = [f"dt=2026-12-0{day[0]}"] if day else None
        commit = AssetEvent(
            eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=snapshot, partitions=touched
        )
        events.append((commit, at))
        if asset == A:
            verdict = EventType.QUALITY_CHECK_PASSED if passed else EventType.QUALITY_CHECK_FAILED
            events.append((AssetEvent(eventType=verdict, assetKey=A, snapshotId=snapshot), at + 1))
    return events


def backtest_of(assets: InMemoryAssetStore, now: int, **limits: Any) -> BacktestRule:
    rules = InMemoryRuleStore()
    check = PutRule(rules, resolver=resolve_asset_change(ResolverStores(rules, *_unused())))
    return BacktestRule(rules, assets, check, retention_days=30, clock=lambda: now, **limits)


def _unused() -> tuple[Any, ...]:
    triggers = InMemoryTriggerStore()
    return (InMemoryStateReader(lambda _: None, triggers), triggers, InMemoryStateHistory(), InMemoryDeferralStore())


steps = st.lists(
    st.tuples(st.sampled_from((A, B)), st.integers(1, 6), st.booleans(), st.integers(2, 90_000), st.integers(1, 3)),
    max_size=14,
)
policies = st.sampled_from(
    [
        ("ALL_UPDATED", {"minIntervalSeconds": 120}),
        ("ALL_UPDATED", {}),
        ("ANY_UPDATED", {"minIntervalSeconds": 60, "quietPeriodSeconds": 30}),
        ("EACH_VERSION", {}),
        ("ALL_UPDATED", {"startFrom": "NEXT_CHANGE"}),
        ("ALL_UPDATED", {"partitioned": True}),
        ("EACH_VERSION", {"partitioned": True}),
        ("ANY_UPDATED", {"partitioned": True, "minIntervalSeconds": 60}),
    ]
)


@settings(max_examples=examples(100), deadline=None)
@given(steps=steps, policy=policies, cut=st.floats(0, 1))
def test_backtest_lists_exactly_the_claims_of_applying_the_rule_and_replaying_the_history(
    steps: list[Step], policy: tuple[str, dict[str, Any]], cut: float
) -> None:
    events = history(steps)
    end = (events[-1][1] if events else T0) + 600_000
    start = T0 + int(cut * (end - T0 - 1))
    body = rule_body(policy[0], **policy[1])
    live = Live()
    for event, at in [e for e in events if e[1] < start]:
        live.push(event, at)
    live.apply(body, start)
    for event, at in [e for e in events if e[1] >= start]:
        live.push(event, at)
    live.wait_until(end)
    claimed = [(t.trigger_key, t.partition, [json_form(p) for p in t.inputs]) for t in live.triggers.triggers.values()]
    live_keys = list(live.triggers.claim_order)

    answer = backtest_of(live.assets, end).backtest("r", {"rule": body, "from": start, "to": end})

    assert [r["triggerKey"] for r in answer["runs"]] == live_keys
    assert sorted((r["triggerKey"], r["partition"], r["inputs"]) for r in answer["runs"]) == sorted(claimed)
    assert answer["history"]["eventsRead"] == len(live.assets.events)  # each event recorded once
    assert answer["errors"] == []


def test_a_backtest_lists_the_runs_with_their_pins_and_what_the_rule_waits_for_now() -> None:
    live = Live()
    for event, at in history([(A, 1, True, 0), (B, 1, True, 1000), (A, 2, False, 1000), (B, 2, True, 1000)]):
        live.push(event, at)
    now = T0 + 10_000
    answer = backtest_of(live.assets, now).backtest("r", {"rule": rule_body("ALL_UPDATED"), "from": T0})
    (run,) = answer["runs"]
    assert {(i["assetKey"], i["snapshotId"]) for i in run["inputs"]} == {(A, 1), (B, 1)}
    assert run["createdAt"] == ms_to_iso(T0 + 1000)
    assert answer["waitingNow"]["ready"] is False  # A's snapshot 2 failed its check
    assert answer["history"] == {
        "keptFrom": ms_to_iso(now - 30 * DAY_MS),
        "eventRetentionDays": 30,
        "eventsRead": 6,
        "eventsBeforeFrom": 0,
        "queries": 2,
    }
    assert live.rules.rules == {} and live.triggers.triggers == {}  # nothing was written to the stores read


def test_the_stored_rule_is_backtested_when_the_body_names_none() -> None:
    store = InMemoryAssetStore()
    tester = backtest_of(store, T0)
    with pytest.raises(NotFoundError):
        tester.backtest("r", None)


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"from": T0 - 31 * DAY_MS}, "from", "kept 30 days"),
        ({"from": T0, "to": T0}, "from", "must be before to"),
        ({"to": T0 + 1}, "to", "in the future"),
        ({"from": "yesterday"}, "from", "ISO 8601"),
        ({"since": T0}, "since", "unknown field"),
        ({"rule": {"target": TARGET, "policy": {"mode": "SOMETIMES"}, "groups": []}}, "rule.", "rule:"),
        ([], "body", "must be an object"),
    ],
)
def test_bad_input_is_a_400_naming_what_is_wrong(body: Any, field: str, words: str) -> None:
    if isinstance(body, dict):
        body = {"rule": rule_body("ANY_UPDATED"), **body}
    with pytest.raises(ValidationError) as raised:
        backtest_of(InMemoryAssetStore(), T0).backtest("r", body)
    assert (raised.value.field or "").startswith(field)
    assert words in str(raised.value)


def test_a_history_longer_than_the_bound_is_refused_not_cut() -> None:
    live = Live()
    for event, at in history([(B, n, True, 1000) for n in range(1, 8)]):
        live.push(event, at)
    tester = backtest_of(live.assets, T0 + 60_000, max_events=5)
    with pytest.raises(ValidationError, match="more than 5 events"):
        tester.backtest("r", {"rule": rule_body("ANY_UPDATED")})


def test_a_replay_past_its_time_budget_is_refused_not_cut() -> None:
    live = Live()
    for event, at in history([(B, 1, True, 1000)]):
        live.push(event, at)
    tester = backtest_of(live.assets, T0 + 60_000, budget_s=-1)
    with pytest.raises(ValidationError, match=r"the backtest took more than -1 s \(after 0 of 1 events\)"):
        tester.backtest("r", {"rule": rule_body("ANY_UPDATED")})


@pytest.fixture
def box() -> Iterator[Container]:
    built = wiring.in_memory(Settings(admin_token=TOKEN))
    container.use(built)
    yield built
    container.use(None)


def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    answer = build_app().resolve(api_event(method, path, body, headers=headers), FakeLambdaContext())
    return int(answer["statusCode"]), json.loads(answer["body"]) if answer["body"] else None


def test_the_route_backtests_a_changed_rule_and_the_stored_one_without_writing_a_claim(box: Container) -> None:
    for snapshot in (1, 2):
        for asset in (A, B):
            event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": snapshot}
            assert call("POST", "/asset-events", event)[0] == 200
    stored = {**rule_body("ANY_UPDATED"), "enabled": False}
    stored["groups"][0]["members"] = [{"assetKey": A}, {"assetKey": B}]
    assert call("PUT", "/rules/r", stored)[0] == 201

    status, as_stored = call("POST", "/rules/r/backtest")
    assert status == 200, as_stored
    assert as_stored["runs"] == []  # the stored rule is disabled: it would have started nothing
    status, changed = call("POST", "/rules/r/backtest", {"rule": {**stored, "enabled": True}})
    assert status == 200, changed
    assert [sorted((i["assetKey"], i["snapshotId"]) for i in r["inputs"]) for r in changed["runs"]][-1] == [
        (A, 2),
        (B, 2),
    ]
    assert changed["history"]["eventsRead"] == 4 and changed["waitingNow"]["ruleId"] == "r"
    assert box.trigger_store.list_for_rule("r").items == []  # nothing claimed for real

    status, refused = call("POST", "/rules/r/backtest", {"rule": {**stored, "policy": {"mode": "SOMETIMES"}}})
    assert status == 400 and "rule: policy.mode" in json.dumps(refused), refused
    assert call("POST", "/rules/missing/backtest")[0] == 404


class InProcessApi(ApiClient):
    """The CLI's API client answered by the API app itself, in process (the in-memory container)."""

    def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        status, answer = call(method, path, kwargs.get("body"))
        if status >= 400:  # as the client over HTTP: the server's message
            raise ApiError(status, f"{status}: {answer['message']}", answer)
        return status, answer


def test_the_cli_sends_the_rule_file_and_range_and_prints_the_runs_and_pins(box: Container, tmp_path: Path) -> None:
    for snapshot in (1, 2):
        event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": B, "snapshotId": snapshot}
        assert call("POST", "/asset-events", event)[0] == 200
    rule = tmp_path / "rule.yaml"
    rule.write_text(yaml.safe_dump({"target": TARGET, "groups": [{"groupId": "g", "members": [{"assetKey": B}]}]}))
    args = build_parser().parse_args(["backtest", "r", "-f", str(rule), "--from", "2020-01-01T00:00:00Z"])
    stdout = io.StringIO()
    with (
        captured(stdout, io.StringIO()),
        pytest.raises(ApiError, match=r"400: from .* is before the oldest history kept"),
    ):
        backtest.backtest(InProcessApi(), args)  # older than the 30 days kept
    args = build_parser().parse_args(["backtest", "r", "-f", str(rule)])
    with captured(stdout, io.StringIO()):
        assert backtest.backtest(InProcessApi(), args) == 0
    lines = stdout.getvalue().splitlines()
    assert lines[0].startswith("rule r on the history from ") and lines[0].endswith(": 2 run(s) it would have started")
    assert [line for line in lines if "pinned" in line] == [
        f"    pinned {B} (snapshot {n}, state version {n})" for n in (1, 2)
    ]
    assert "  now: NOT READY" in lines  # nothing newer than the run's snapshot 2
