"""``startFrom: NEXT_CHANGE`` and ``backfill: SKIP`` per partition: a partitioned group starts, and absorbs a
backfill, as an unpartitioned group does, partition by partition (the point every partition starts from is kept in
the group's own cursor: ``lakehook.domain.partition_start``). On the in-memory fakes, through the rule use cases."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.explain import GroupExplanation
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from lakehook.domain.triggers import Trigger, TriggerStatus
from lakehook.usecases.rule_writes import PutRule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_each_version import push_in_any_order
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake, daily

A, B, C = "2026-12-01", "2026-12-02", "2026-12-03"


def body(mode: str = "ANY_UPDATED", enabled: bool = True, **policy: Any) -> dict[str, Any]:
    return {
        "target": {"type": "eventbridge", "eventBusName": "runs"},
        "policy": {"mode": mode, **policy},
        "enabled": enabled,
        "groups": [
            {
                "groupId": "g",
                "partitionBy": ["dt"],
                "members": [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}],
            }
        ],
    }


class Started(Lake):
    """The partitioned lake with ``PUT /rules`` on the same fakes."""

    def __init__(self, *rules: Rule) -> None:
        super().__init__(*rules)
        self.put_rule = PutRule(self.rules, lambda: self.now, resolver=self.resolve)

    def put(self, **options: Any) -> None:
        self.put_rule.put("daily", body(**options))

    def made(self, skipped: bool = False) -> list[tuple[str | None, dict[str, int | None]]]:
        """The partition and pins of each of the rule's partition runs (``skipped``: SKIPPED claims), in order."""
        order = [self.triggers.triggers[k] for k in self.triggers.claim_order]
        wanted = [
            t
            for t in order
            if t.rule_id == "daily" and t.partition is not None and (t.status is TriggerStatus.SKIPPED) == skipped
        ]
        return [(t.partition, _pins(t)) for t in wanted]

    def lines(self) -> dict[str, dict[str, Any]]:
        return {p["partition"]: p for p in GroupExplanation.from_domain(self.explain()).dump()["partitions"]}


def _pins(trigger: Trigger) -> dict[str, int | None]:
    return {p.asset_key: p.snapshot_id for p in trigger.inputs}


def explain_agrees(lake: Started) -> None:
    """Explain's READY partitions (a run, or a backfill's skip) are exactly those an evaluation now claims, with the
    pins explain shows; no partition it shows waiting is claimed."""
    ready = {
        p: {pin["assetKey"]: pin["snapshotId"] for pin in line["pins"]}
        for p, line in lake.lines().items()
        if line["status"] == Status.READY.value
    }
    before = len(lake.triggers.claim_order)
    stored = lake.rules.get_rule("daily")
    assert stored is not None
    lake.resolve.evaluate(stored.rule)
    made = [lake.triggers.triggers[k] for k in lake.triggers.claim_order[before:]]
    assert {t.partition: _pins(t) for t in made if t.rule_id == "daily" and t.partition is not None} == ready


# --- startFrom: NEXT_CHANGE ----------------------------------------------------------------------------


def test_a_next_change_rule_runs_no_partition_it_found_and_runs_a_day_once_a_new_commit_touches_it() -> None:
    lake = Started()
    lake.commit(ORDERS, 1, A, B)
    lake.commit(PAYMENTS, 7, A, B)
    lake.deliver()
    lake.put(startFrom="NEXT_CHANGE")
    assert lake.made() == []
    [start] = [t for t in lake.triggers.triggers.values() if t.rule_id == "daily"]
    assert (start.status, start.partition, _pins(start)) == (TriggerStatus.SKIPPED, None, {ORDERS: 1, PAYMENTS: 7})
    lines = lake.lines()
    statuses = {p: line["status"] for p, line in lines.items()}
    assert statuses == dict.fromkeys((f"dt={A}", f"dt={B}"), "WAITING_FOR_UPDATE")
    assert "startFrom is NEXT_CHANGE: snapshot 1 was there when the rule started" in lines[f"dt={A}"]["reason"]
    lake.deliver()  # a redelivery, or any other evaluation, still runs nothing
    assert lake.made() == []

    lake.commit(ORDERS, 2, A)
    lake.deliver()

    assert lake.made() == [(f"dt={A}", {ORDERS: 2, PAYMENTS: 7})]
    assert lake.lines()[f"dt={B}"]["status"] == "WAITING_FOR_UPDATE"


def test_all_updated_after_next_change_waits_for_every_member_to_touch_the_day_again() -> None:
    lake = Started()
    lake.commit(ORDERS, 1, A)
    lake.commit(PAYMENTS, 7, A)
    lake.deliver()
    lake.put(mode="ALL_UPDATED", startFrom="NEXT_CHANGE")
    lake.commit(ORDERS, 2, A)
    lake.deliver()
    assert lake.made() == []
    line = lake.lines()[f"dt={A}"]
    assert line["status"] == "WAITING_FOR_UPDATE" and PAYMENTS in line["reason"]
    lake.commit(PAYMENTS, 8, A, B)
    lake.deliver()
    assert lake.made() == [(f"dt={A}", {ORDERS: 2, PAYMENTS: 8})]  # B: orders never touched it


def test_a_day_first_touched_after_the_start_runs_and_one_touched_only_before_never_does() -> None:
    lake = Started()
    lake.commit(ORDERS, 1, A)
    lake.commit(PAYMENTS, 7, A, B)  # payments' newest commit when the rule starts touched A and B
    lake.deliver()
    lake.put(startFrom="NEXT_CHANGE")
    lake.commit(ORDERS, 2, B)  # B: orders' first commit touching it, after the start
    lake.deliver()
    assert lake.made() == [(f"dt={B}", {ORDERS: 2, PAYMENTS: 7})]


def test_re_enabling_a_next_change_rule_skips_what_arrived_while_it_was_disabled_per_partition() -> None:
    lake = Started()
    lake.put(startFrom="NEXT_CHANGE")
    lake.commit(ORDERS, 1, A)
    lake.commit(PAYMENTS, 7, A)
    lake.deliver()
    assert lake.made() == [(f"dt={A}", {ORDERS: 1, PAYMENTS: 7})]  # nothing was there when it started
    lake.put(startFrom="NEXT_CHANGE", enabled=False)
    lake.commit(ORDERS, 2, A)
    lake.deliver()
    lake.put(startFrom="NEXT_CHANGE")
    assert len(lake.made()) == 1
    assert lake.lines()[f"dt={A}"]["status"] == "WAITING_FOR_UPDATE"
    lake.commit(PAYMENTS, 8, A)
    lake.deliver()
    assert lake.made()[1:] == [(f"dt={A}", {ORDERS: 2, PAYMENTS: 8})]


class StartedInOrder(Started):
    """The started lake whose runs and late skips of rule ``daily`` are told apart (EACH_VERSION)."""

    def ran(self, day: str) -> list[int | None]:
        """Orders' version in each of ``day``'s runs, in claim order."""
        return [pins[ORDERS] for partition, pins in self.made() if partition == f"dt={day}"]  # no SKIPPED claim

    def late(self, day: str) -> set[int | None]:
        return {t.inputs[0].snapshot_id for t in self._skips() if t.partition == f"dt={day}"}

    def _skips(self) -> list[Trigger]:
        return [t for t in self.triggers.triggers.values() if t.rule_id == "daily" and is_late_skip(t)]


def test_each_version_after_next_change_runs_every_commit_after_the_start_in_order_and_none_before() -> None:
    """Until 2026-12-07 a 400. Another EACH_VERSION rule keeps the versions from before the start, so a partition's
    oldest kept version is one there then: the rule's first run of a day is the first commit after its start."""
    lake = StartedInOrder(daily(rule_id="other", mode="EACH_VERSION"))
    lake.commit(ORDERS, 1, A)
    lake.commit(ORDERS, 2, A)
    lake.commit(PAYMENTS, 7, A, B)
    lake.deliver()
    lake.put(mode="EACH_VERSION", startFrom="NEXT_CHANGE")
    assert lake.made() == []
    line = lake.lines()[f"dt={A}"]
    assert line["status"] == "WAITING_FOR_UPDATE" and "startFrom is NEXT_CHANGE: snapshot 2" in line["reason"]

    for sid in (5, 4, 3):  # one request, newest first: every one after the start runs, in order
        lake.commit(ORDERS, sid, A)
    lake.deliver()

    assert lake.ran(A) == [3, 4, 5]
    assert all(pins[PAYMENTS] == 7 for _, pins in lake.made())
    assert lake.lines()[f"dt={A}"]["status"] == "WAITING_FOR_UPDATE" and lake.late(A) == set()
    lake.commit(ORDERS, 6, B)  # orders' first commit touching B: after the start, beside payments' 7 from before
    lake.deliver()
    assert lake.made()[3:] == [(f"dt={B}", {ORDERS: 6, PAYMENTS: 7})]
    assert lake.partitions.count_pending("daily", "g") == 0


def test_each_version_after_next_change_reads_a_days_next_version_after_the_start_not_its_oldest_kept() -> None:
    """A day whose commit after the start came in an earlier batch (it waited for payments then): its next version is
    read from the store after the start, not from the day's oldest kept version (1, from before the start)."""
    lake = StartedInOrder(daily(rule_id="other", mode="EACH_VERSION"))
    lake.commit(ORDERS, 1, A, B)
    lake.commit(PAYMENTS, 7, A)
    lake.deliver()
    lake.put(mode="EACH_VERSION", startFrom="NEXT_CHANGE")
    lake.commit(ORDERS, 2, B)
    lake.deliver()
    assert lake.made() == [] and lake.lines()[f"dt={B}"]["status"] == "WAITING_FOR_PARTITION"
    lake.commit(PAYMENTS, 8, B)
    lake.deliver()
    assert lake.made() == [(f"dt={B}", {ORDERS: 2, PAYMENTS: 8})]


def test_each_version_after_next_change_records_a_late_commit_after_the_start_skipped_and_one_before_not() -> None:
    lake = StartedInOrder(daily(rule_id="other", mode="EACH_VERSION"))
    lake.commit(PAYMENTS, 7, A)
    lake.commit(ORDERS, 2, A)
    lake.deliver()
    lake.put(mode="EACH_VERSION", startFrom="NEXT_CHANGE")
    lake.commit(ORDERS, 4, A)
    lake.deliver()
    assert lake.ran(A) == []  # the commit after the start, 3, is not known yet: 4 waits at that gap
    line = lake.lines()[f"dt={A}"]
    assert line["status"] == "WAITING_FOR_VERSION" and "the commit of the table after 2 is not known" in line["reason"]
    lake.sweep(15 * 60_000)  # the gap settled
    assert lake.ran(A) == [4]
    lake.commit(ORDERS, 3, A)  # after the start, but after 4 ran: it cannot run in order any more
    lake.commit(ORDERS, 1, A)  # before the start: no run was owed to it
    lake.deliver()
    assert lake.ran(A) == [4] and lake.late(A) == {3}


days = st.sets(st.sampled_from([A, B, C]), min_size=1, max_size=3)
commit = st.tuples(st.sampled_from([ORDERS, PAYMENTS]), days)


@settings(max_examples=examples(40), deadline=None)
@given(
    before=st.lists(commit, max_size=5),
    after=st.lists(st.tuples(commit, st.booleans()), max_size=6),
    mode=st.sampled_from(["ANY_UPDATED", "ALL_UPDATED"]),
)
def test_a_next_change_rule_runs_a_day_only_for_commits_after_its_start_and_explain_agrees(
    before: list[tuple[str, set[str]]], after: list[tuple[tuple[str, set[str]], bool]], mode: str
) -> None:
    """Whatever commits came before the start (known to the resolver through another rule mapping the tables alike)
    and in whatever batches the later ones arrive: every run pins a
    commit newer than where the rule started; a day is run with its newest commits once a member touched it since
    (ALL_UPDATED: each member) and both members have touched it; explain shows no day READY that the resolver left."""
    lake = Started(daily(rule_id="other"))  # another rule mapping the tables alike: the facts of before are kept
    sid = {ORDERS: 0, PAYMENTS: 100}
    newest: dict[tuple[str, str], int] = {}  # (asset, day) -> the newest commit touching it
    for asset, touched in before:
        sid[asset] += 1
        lake.commit(asset, sid[asset], *sorted(touched))
        newest.update({(asset, d): sid[asset] for d in touched})
        lake.deliver()
    lake.put(mode=mode, startFrom="NEXT_CHANGE")
    started = dict(sid)
    since: dict[str, set[str]] = {}  # day -> the members that touched it after the start
    for (asset, touched), deliver in after:
        sid[asset] += 1
        lake.commit(asset, sid[asset], *sorted(touched))
        newest.update({(asset, d): sid[asset] for d in touched})
        for day in touched:
            since.setdefault(day, set()).add(asset)
        if deliver:
            lake.deliver()
            explain_agrees(lake)
    lake.deliver()
    explain_agrees(lake)
    runs = lake.made()
    both = {f"dt={d}" for d, members in since.items() if (ORDERS, d) in newest and (PAYMENTS, d) in newest}
    last: dict[str | None, dict[str, int | None]] = {}
    for partition, pins in runs:
        newer = [(pins[a] or 0) > max(started[a], (last.get(partition) or {}).get(a) or 0) for a in (ORDERS, PAYMENTS)]
        assert all(newer) if mode == "ALL_UPDATED" else any(newer), (partition, pins, started, last.get(partition))
        last[partition] = pins
    assert set(last) <= both  # no day runs for what was there when the rule started
    if mode == "ANY_UPDATED":  # each day touched since runs with its newest commits
        assert last == {
            f"dt={d}": {ORDERS: newest[(ORDERS, d)], PAYMENTS: newest[(PAYMENTS, d)]}
            for d in since
            if f"dt={d}" in both
        }
    else:  # a day every member touched since runs (then again only once both touched it after that run)
        assert set(last) == {f"dt={d}" for d, members in since.items() if members == {ORDERS, PAYMENTS}} & both
    assert all(line["status"] != Status.READY.value for line in lake.lines().values())


@settings(max_examples=examples(40), deadline=None)
@given(data=st.data(), before=st.lists(days, max_size=3), touched=st.lists(days, min_size=1, max_size=6))
def test_each_version_after_next_change_runs_each_commit_after_the_start_once_in_order_and_explain_agrees(
    data: st.DataObject, before: list[set[str]], touched: list[set[str]]
) -> None:
    """Orders' commits before the start (their versions kept by another EACH_VERSION rule), then commits after it
    pushed in any order, delivered in any batches (some again), runs ending between: explain's READY partitions are
    what the next wake claims; in the end every commit after the start touching a day ran for it once, in order, or is
    recorded SKIPPED there (it came after a newer one ran); none from before the start ran or was skipped."""
    lake = StartedInOrder(daily(rule_id="other", mode="EACH_VERSION"))
    lake.commit(PAYMENTS, 100, A, B, C)
    for sid, touching in enumerate(before, 1):
        lake.commit(ORDERS, sid, *sorted(touching))
    lake.deliver()
    lake.put(mode="EACH_VERSION", startFrom="NEXT_CHANGE")
    start = len(before)
    sids = list(range(start + 1, start + len(touched) + 1))
    push_in_any_order(lake, data, sids, lambda sid: lake.commit(ORDERS, sid, *sorted(touched[sid - start - 1])))
    for day in (A, B, C):
        ran, late = lake.ran(day), lake.late(day)
        assert ran == sorted(set(ran)) and all(sid is not None and sid > start for sid in ran), (day, ran)
        wanted = {sid for sid in sids if day in touched[sid - start - 1]}
        assert set(ran) | late == wanted and not set(ran) & late, (day, ran, late, wanted)
        assert all(sid is not None and sid < max(s or 0 for s in ran) for sid in late)


# --- backfill: SKIP ------------------------------------------------------------------------------------


def backfilled() -> Started:
    """Days A, B, C ran once; then orders' backfill rewrites A and B while payments touches C."""
    lake = Started()
    lake.put(backfill="SKIP")
    lake.commit(ORDERS, 1, A, B, C)
    lake.commit(PAYMENTS, 7, A, B, C)
    lake.deliver()
    assert len(lake.made()) == 3
    lake.push("BACKFILL_STARTED", ORDERS, backfillId="bf1")
    lake.commit(ORDERS, 2, A, B)
    lake.commit(PAYMENTS, 8, C)
    lake.deliver()
    return lake


def test_every_day_waits_while_a_backfill_runs_then_its_days_are_skipped_and_the_others_run() -> None:
    lake = backfilled()
    assert len(lake.made()) == 3
    lines = lake.lines()
    assert {p: line["status"] for p, line in lines.items()} == dict.fromkeys(
        (f"dt={A}", f"dt={B}", f"dt={C}"), "BLOCKED_BY_BACKFILL"
    )
    assert "backfill bf1 is running" in lines[f"dt={C}"]["reason"]

    lake.push("BACKFILL_COMPLETED", ORDERS, backfillId="bf1")
    lake.deliver()

    assert lake.made()[3:] == [(f"dt={C}", {ORDERS: 1, PAYMENTS: 8})]
    skipped = {p: pins for p, pins in lake.made(skipped=True)}
    assert skipped == {f"dt={A}": {ORDERS: 2, PAYMENTS: 7}, f"dt={B}": {ORDERS: 2, PAYMENTS: 7}}
    reasons = [t.reason or "" for t in lake.triggers.triggers.values() if t.partition == f"dt={A}"]
    assert any("backfill completed on" in r and "bf1" in r for r in reasons)
    assert all(line["status"] == "WAITING_FOR_UPDATE" for line in lake.lines().values())
    assert lake.partitions.count_pending("daily", "g") == 0

    lake.commit(ORDERS, 3, A)
    lake.deliver()
    assert lake.made()[4:] == [(f"dt={A}", {ORDERS: 3, PAYMENTS: 7})]
    lake.push("BACKFILL_COMPLETED", ORDERS, backfillId="bf1")  # a redelivered completion skips nothing more
    lake.commit(ORDERS, 4, B)
    lake.deliver()
    assert lake.made()[5:] == [(f"dt={B}", {ORDERS: 4, PAYMENTS: 7})]
    assert len(lake.made(skipped=True)) == 2


def test_explain_after_a_backfill_completed_says_what_the_resolver_then_does() -> None:
    lake = backfilled()
    lake.push("BACKFILL_COMPLETED", ORDERS, backfillId="bf1")
    said = lake.lines()  # before the resolver saw the completion
    assert said[f"dt={A}"]["status"] == "READY" and "skipped" in said[f"dt={A}"]["reason"]
    assert said[f"dt={C}"]["status"] == "READY"
    lake.deliver()
    assert [p for p, _ in lake.made(skipped=True)] == [f"dt={B}", f"dt={A}"]
    assert lake.made()[3:] == [(f"dt={C}", {ORDERS: 1, PAYMENTS: 8})]


def test_each_version_per_partition_absorbs_a_backfills_versions_in_one_skip_and_runs_the_next_one() -> None:
    lake = Started()
    lake.put(mode="EACH_VERSION", backfill="SKIP")
    lake.commit(ORDERS, 1, A, B)
    lake.commit(PAYMENTS, 7, A, B)
    lake.deliver()
    lake.push("BACKFILL_STARTED", ORDERS, backfillId="bf1")
    lake.commit(ORDERS, 2, A)
    lake.commit(ORDERS, 3, A)
    lake.deliver()
    assert {line["status"] for line in lake.lines().values()} == {"BLOCKED_BY_BACKFILL"}
    lake.push("BACKFILL_COMPLETED", ORDERS, backfillId="bf1")
    lake.deliver()
    lake.sweep(0)
    assert lake.made(skipped=True) == [(f"dt={A}", {ORDERS: 3, PAYMENTS: 7})]  # versions 2 and 3: the backfill's
    lake.commit(ORDERS, 4, A)
    lake.deliver()
    assert lake.made()[2:] == [(f"dt={A}", {ORDERS: 4, PAYMENTS: 7})]


@settings(max_examples=examples(40), deadline=None)
@given(
    normal=st.lists(st.tuples(st.sampled_from([ORDERS, PAYMENTS]), days), max_size=4),
    backfill=st.lists(days, min_size=1, max_size=3),
    after=st.lists(st.tuples(st.sampled_from([ORDERS, PAYMENTS]), days), max_size=3),
    deliver_between=st.booleans(),
)
def test_no_commit_of_a_backfill_ever_runs_and_later_commits_run_normally(
    normal: list[tuple[str, set[str]]],
    backfill: list[set[str]],
    after: list[tuple[str, set[str]]],
    deliver_between: bool,
) -> None:
    """Orders' backfill commits touch some days while payments' commits (and orders' own, before it) come in any
    order: nothing runs while it runs; once it completed, each day one of its commits touched is recorded SKIPPED
    pinning that commit, no run ever pins one of its commits as news, and a commit after it runs its days."""
    lake = Started()
    lake.put(backfill="SKIP")
    lake.commit(ORDERS, 1, A, B, C)
    lake.commit(PAYMENTS, 100, A, B, C)
    lake.deliver()
    ran = len(lake.made())
    lake.push("BACKFILL_STARTED", ORDERS, backfillId="bf1")
    sid = {ORDERS: 1, PAYMENTS: 100}
    touched_by_backfill: dict[str, int] = {}
    events = [(PAYMENTS, d) for a, d in normal if a == PAYMENTS] + [(ORDERS, d) for d in backfill]
    for asset, touched in events:
        sid[asset] += 1
        lake.commit(asset, sid[asset], *sorted(touched))
        if asset == ORDERS:
            touched_by_backfill.update(dict.fromkeys(touched, sid[asset]))
        if deliver_between:
            lake.deliver()
    lake.deliver()
    explain_agrees(lake)
    assert len(lake.made()) == ran  # everything waits while the backfill runs
    lake.push("BACKFILL_COMPLETED", ORDERS, backfillId="bf1")
    explain_agrees(lake)  # before the resolver saw the completion: explain shows the skips it is about to make
    lake.deliver()
    lake.sweep(0)  # a day with payments' news too runs after its skip: one claim a partition per invocation
    skipped = {p: pins for p, pins in lake.made(skipped=True)}
    assert skipped.keys() == {f"dt={d}" for d in touched_by_backfill}
    assert all(skipped[f"dt={d}"][ORDERS] == s for d, s in touched_by_backfill.items())
    for partition, pins in lake.made()[ran:]:
        assert pins[ORDERS] == 1 or partition in skipped  # orders' backfill never is a run's news
    done = len(lake.made())
    for asset, touched in after:
        sid[asset] += 1
        lake.commit(asset, sid[asset], *sorted(touched))
        lake.deliver()
        explain_agrees(lake)
        assert {p for p, _ in lake.made()[done:]} == {f"dt={d}" for d in touched}
        done = len(lake.made())
    assert all(line["status"] != Status.READY.value for line in lake.lines().values())
