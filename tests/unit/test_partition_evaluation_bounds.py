"""An evaluation no stream batch brought (a PUT of the rule, evaluate now, explain), on the fakes: a rule written
after a commit touching more partitions than its event holds runs every one, each invocation within its bounds (the
PUT takes at most ``max_facts`` facts' worth of the members' newest commits, the rest and the commit's part items go
through the resolver's queue as slices); a fan-out member's commit of many days is weighed by the hours it names;
explain takes what the PUT takes, says how much of each commit that is, and its verdicts are the PUT's; and a poll of
a snapshot a push recorded first with fewer keys brings the resolver the poll's other keys.
(tests/integration/test_partition_overflow_on_moto.py does the PUT and the push before the poll on moto.)"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.evaluation import PartialCommit
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.domain.json_form import json_form
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Rule
from lakehook.domain.snapshots import SnapshotInfo, snapshot_event
from lakehook.domain.state import snapshot_record
from lakehook.ports.rules import StateChange
from lakehook.usecases.rule_writes import PutRule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_bounds import Bounded
from tests.unit.test_partition_fanout import by_hour
from tests.unit.test_partition_resolve import CLICKS, ORDERS, PAYMENTS, Lake, daily

# bounds at scale (a commit of a thousand days, 1,300 partitions): make test runs them, the fast tier leaves them out
pytestmark = pytest.mark.slow


def days(n: int, start: int = 0) -> list[str]:
    return [f"dt={date(2000, 1, 1) + timedelta(days=i)}" for i in range(start, start + n)]


def recorded(lake: Lake, event: AssetEvent, source: SourceType, info: SnapshotInfo | None = None) -> None:
    """Ingest ``event``; the stream records it makes: the event item's (unless a duplicate), the state's (when it
    moved) and each new part item's."""
    before, seen = lake.store.get_state(event.asset_key), len(lake.store.inserted_parts)
    more = info.more_partitions if info is not None else ()
    result = lake.ingest.ingest(event, source, more_partitions=more)
    stream = lake.stream.setdefault(event.asset_key, [])
    if result.status is not IngestStatus.DUPLICATE:
        stream.append(StateChange(event.asset_key, snapshot=snapshot_record(event), partitions=event.partitions))
    after = lake.store.get_state(event.asset_key)
    if after is not None and (before is None or before.version != after.version):
        stream.append(StateChange(event.asset_key, after))
    for part in lake.store.inserted_parts[seen:]:
        stream.append(
            StateChange(
                part.asset_key,
                snapshot=part.snapshot,
                partitions=part.partitions,
                partitions_only=True,
                offset=part.offset,
                total=part.total,
            )
        )


def polled(lake: Lake, asset: str, sid: int, keys: list[str]) -> None:
    """A poll of a commit of ``asset`` touching ``keys``: its event (the first 1000 keys) and part items (the rest)."""
    touched = TouchedPartitions.read(keys)
    info = SnapshotInfo(snapshotId=sid, commitTime=1_000 + sid, commitKind="APPEND", partitions=touched)
    recorded(lake, snapshot_event(asset, info), SourceType.POLL, info)


def pushed(lake: Lake, asset: str, sid: int, keys: list[str]) -> None:
    """A push of a commit of ``asset`` naming ``keys``."""
    push = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=asset, snapshotId=sid, partitions=keys)
    recorded(lake, push, SourceType.PUSH)


def put(bounded: Bounded, rule: Rule) -> None:
    """``PUT /rules/{id}``: the rule stored, then evaluated at once (one invocation, counted)."""
    lake = bounded.lake
    writer = PutRule(lake.rules, clock=lambda: lake.now, resolver=lake.resolve)
    bounded._counted(lambda: writer.put(rule.rule_id, json_form(rule)))


def explained(lake: Lake, rule_id: str = "daily") -> tuple[dict[str, bool], tuple[PartialCommit, ...]]:
    """Explain's partitions (each: ready?) and the commits it says it took only in part."""
    stored = lake.rules.get_rule(rule_id)
    assert stored is not None
    board = lake.resolve.evaluate(stored.rule, claim=False).verdicts[(rule_id, "g")]
    return {p.partition or "": p.ready for p in board.partitions}, board.partial


def test_a_rule_put_after_a_commit_touching_1300_partitions_runs_every_one_over_bounded_invocations() -> None:
    """Both tables committed the same 1,300 days before the rule existed (the state keeps the first 1000 keys, a
    part item the other 300). The PUT writes at most 1000 facts and sends the rest, parts included, to the queue;
    draining it runs all 1,300 days once, pinning both commits, every invocation within its bounds."""
    bounded = Bounded.of()  # no rule yet
    lake = bounded.lake
    keys = days(1_300)
    polled(lake, ORDERS, 3, keys)
    polled(lake, PAYMENTS, 7, keys)
    lake.stream.clear()  # their records found no rule: nothing to resolve

    put(bounded, daily())
    assert bounded.invocations[0].facts <= 1000 and bounded.queue.messages  # the rest: the queue's
    bounded.drain()
    bounded.bounded()
    runs = lake.runs()
    assert sorted(p for p, _ in runs) == keys  # every day once, past the state's first 1000 too
    assert all(pins == [(ORDERS, 3), (PAYMENTS, 7)] for _, pins in runs)
    assert lake.partitions.count_pending("daily", "g") == 0


def test_explain_takes_what_the_put_takes_says_how_much_and_its_verdicts_are_the_puts() -> None:
    """Before the PUT, explain of the rule (stored, but not evaluated yet) shows the partitions the PUT's own
    invocation evaluates, says orders' commit touched 1,300 and it evaluated the state's 1000, and each partition it
    shows READY is one the PUT claims, each other one the PUT does not claim."""
    bounded = Bounded.of(max_facts=2000, max_partition_claims=100)
    lake = bounded.lake
    keys = days(1_300)
    polled(lake, ORDERS, 3, keys)
    polled(lake, PAYMENTS, 7, keys[:1000:2])  # every other day of the first 1000
    rule = daily()
    lake.rules.put_rule(rule, lake.now)
    shown, partial = explained(lake)
    assert partial == (PartialCommit(ORDERS, 3, 1_300, 1_000),)
    assert len(shown) == 20 and sum(shown.values()) == 10
    put(bounded, rule)
    claimed = {p for p, _ in lake.runs()}
    assert len(claimed) == 100  # the claims of one invocation: the newest ready days the state names
    assert {p for p, ready in shown.items() if ready} <= claimed
    assert not {p for p, ready in shown.items() if not ready} & claimed
    assert set(explained(lake)[0]) >= set(shown) - claimed  # unclaimed ones stay on the board


def test_a_fan_out_members_commit_of_1000_days_under_a_put_is_weighed_by_its_hours() -> None:
    """The daily table's newest commit touched 1000 days (24,000 hours): the PUT takes the days whose hours fit one
    invocation's bound (41) and carries the others over in slices of 41 days; explain says so; every hour the hourly
    table touched runs once, pinning the day's commit, and every invocation stays within its bounds."""
    bounded = Bounded.of(max_partition_claims=100)
    lake = bounded.lake
    day_keys = [f"dt={date(2024, 1, 1) + timedelta(days=i)}" for i in range(1_000)]
    hours = [f"hour={k[3:]}-10" for k in day_keys[::10]]  # one hour of every tenth day: 100
    polled(lake, CLICKS, 900, hours)
    polled(lake, ORDERS, 1, day_keys)
    lake.stream.clear()
    rule = by_hour()
    lake.rules.put_rule(rule, lake.now)
    shown, partial = explained(lake, "hourly")
    assert len(shown) == 20
    [cut] = [c for c in partial if c.asset_key == ORDERS]
    assert (cut.snapshot_id, cut.touched) == (1, 1_000) and 1 <= cut.evaluated <= 1000 // 24

    put(bounded, rule)
    first = bounded.invocations[0]
    assert first.facts <= 1000 // 24 + 100  # days whose hours fit, and the hourly table's 100 hours
    pending = lake.partitions.count_pending("hourly", "g")
    assert pending <= 1000  # the hours it evaluated: the days it took, not 24,000
    slices = [m["partitions"] for m in bounded.queue.messages if m["kind"] == "partitions"]
    assert slices and all(len(s) <= 1000 // 24 for s in slices)
    bounded.drain()
    bounded.bounded()
    runs = lake.runs()
    assert sorted(p for p, _ in runs) == sorted(f"hr={h[5:]}" for h in hours)
    assert all(dict(pins)[ORDERS] == 1 for _, pins in runs)


def test_a_poll_of_a_snapshot_a_push_recorded_first_with_fewer_keys_runs_every_key_the_poll_knows() -> None:
    """Orders pushed its commit naming 5 days; the poll of that snapshot reads 1,300: the event and the state keep
    the push's 5, and part 0 (the poll's first 1000 but those 5) and part 1 (the other 300) bring the resolver the
    rest. Every day payments touched too runs, once."""
    bounded = Bounded.of(daily())
    lake = bounded.lake
    keys = days(1_300)
    polled(lake, PAYMENTS, 7, keys)
    pushed(lake, ORDERS, 3, keys[:5])
    bounded.deliver()
    bounded.drain()
    assert sorted(p for p, _ in lake.runs()) == keys[:5]
    before = len(lake.store.inserted_parts)
    polled(lake, ORDERS, 3, keys)
    parts = lake.store.inserted_parts[before:]
    assert [(p.part, len(p.keys)) for p in parts] == [(0, 995), (1, 300)]
    state = lake.store.get_state(ORDERS)
    assert state is not None and state.latest_partitions is not None and state.latest_partitions.count == 5
    bounded.deliver()  # the parts' records: the event was a duplicate, the state did not move
    bounded.drain()
    bounded.bounded()
    runs = lake.runs()
    assert sorted(p for p, _ in runs) == keys and all(pins == [(ORDERS, 3), (PAYMENTS, 7)] for _, pins in runs)


@settings(max_examples=examples(20), deadline=None)
@given(
    orders=st.integers(1, 60),
    payments=st.integers(1, 60),
    first=st.integers(0, 8),
    max_facts=st.integers(1, 25),
    max_claims=st.integers(1, 6),
    data=st.data(),
)
def test_a_put_after_commits_past_the_bound_runs_every_day_both_touched_at_any_bound(
    orders: int, payments: int, first: int, max_facts: int, max_claims: int, data: st.DataObject
) -> None:
    """At generated sizes and bounds (a commit past what one invocation takes, or not), a push of orders naming some
    of its days before the poll or none: a rule PUT afterwards runs every day both tables touched exactly once, the
    queue's messages handed over in any order and some twice, every invocation within its bounds."""
    bounded = Bounded.of(max_facts=max_facts, max_partition_claims=max_claims, pending_page=max_claims)
    lake = bounded.lake
    mine, theirs = days(orders), days(payments, start=orders // 2)
    if first:
        pushed(lake, ORDERS, 3, mine[:first])
    polled(lake, ORDERS, 3, mine)
    polled(lake, PAYMENTS, 7, theirs)
    lake.stream.clear()
    put(bounded, daily())
    bounded.drain(data)
    bounded.bounded()
    runs = [p for p, _ in lake.runs()]
    assert sorted(runs) == sorted(set(mine) & set(theirs))
