"""Random histories of partitioned tables, delivered as the stream and the resolver's queue deliver them, checked
against a simple model of which partitions must run (issue 33's proof item: one claim per combination, none lost,
explain equal to what the resolver does).

Three tables: ``orders`` (daily: ``dt=<day>/region=<r>``), ``clicks`` (hourly: ``hour=<day>-<hh>/region=<r>``) and
an unpartitioned gate ``dim``. Three partitioned rules map them in every way docs/partitions.md names: ``plain`` keyed
on ``dt, region`` (orders as they are, clicks' hours cut to days, behind the gate), ``rollup`` keyed on ``dt`` (clicks
rolled up over hours 09 and 10 of each day, ``complete: {from: 9, to: 11}``; hour 08 lies outside it; behind the
gate) and ``fan`` keyed on ``hr`` (each orders day fanned out to its 24 hours). Each rule's mode (ALL_UPDATED or
ANY_UPDATED) and cooldown (``minIntervalSeconds``) and the resolver's bounds are drawn per example.

The world commits data (new, duplicate, and late older snapshots), compactions and gate versions; the stream's
records (each commit's event record, the state item's images in order, moto's keys-only INSERT) are handed to the
resolver in generated batches: reordered across items, split, handed over twice, with a tail repeated, or failing
midway (an OutOfTime deadline, or a store write failing before or after it applied) and then redelivered or given
up, or racing (a second invocation, on the same batch or the next records, runs to its end between the first one's
reads and one of its writes); the resolver queue's messages are handed to ``handle_resolver_queue`` in any order,
some twice, some failing.
The system is the real ingest, resolver and explain use cases, wired by the container on its in-memory fakes.

After every step: no trigger key and no (rule, partition, pins) is claimed twice, a partition's pins never go back
and move as its mode says, each partitioned pin is a data commit touching the partition, and a cooldown holds
between two runs of one partition. At an explain step: the partitions explain shows READY are exactly the ones the
next resolver invocation with no new input claims (with the pins explain shows; a partition carried past the claims
bound may be claimed first by the slice of a commit explain says it took in part, pinning that commit), and none it
shows otherwise is claimed. Once everything is delivered, drained and swept: no partition whose condition holds in
the model is left without a claim for its newest combination, the pending partitions are exactly those a partitioned
member touched since their last run, and explain counts them and shows them as waiting (a rollup day missing an hour
included).

The model is independent of the code under test: it keeps the commits as the test generated them and computes each
partition's newest data commit per member from them, not from ``partition_evaluation``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings, target
from hypothesis import event as label
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.domain.json_form import json_form
from lakehook.domain.plan_lanes import EXPLAIN_PAGE
from lakehook.domain.state import snapshot_record
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.handlers import handle_resolver_queue
from lakehook.observability import logger
from lakehook.ports.rules import ClaimOutcome, ClaimResult, Deferral, StateChange
from lakehook.settings import Settings
from lakehook.usecases.late_versions import LateSnapshotNotice
from lakehook.usecases.resolve import ResolveAssetChange, ResolverLimits, ResolverStores, SweepDeferred
from lakehook.usecases.resolve_report import OutOfTime
from lakehook.usecases.rules import parse_rule
from tests import wiring
from tests.fakes.memory import InMemoryAssetStore, InMemoryWorkQueue
from tests.fakes.memory_partitions import InMemoryPartitionStore
from tests.fakes.memory_rules import InMemoryTriggerStore
from tests.hypothesis_profiles import examples
from tests.wiring import ingest_events, resolve_asset_change

# A passing run takes well under a minute; a failing one shrinks for up to Hypothesis's 300 s on top.
pytestmark = pytest.mark.timeout(900)

ORDERS = "paimon://lake/ods/orders"
CLICKS = "iceberg://glue/ods/clicks"
DIM = "paimon://lake/dim/shops"
PARTITIONED = (ORDERS, CLICKS)
DAYS = ("2026-12-01", "2026-12-02")
HOURS = ("08", "09", "10")
ROLLED = ("09", "10")  # the rollup's coverage [9, 11): hour 08 is outside it
REGIONS = ("eu", "us")
INTERVAL_S = 60
START = 1_750_000_000_000
RULE_IDS = ("plain", "rollup", "fan")

Key = tuple[str, ...]  # orders: (day, region); clicks: (day, hour, region)


def _rule(rule_id: str, mode: str, interval: int) -> Any:
    members: dict[str, list[dict[str, Any]]] = {
        "plain": [
            {"assetKey": ORDERS, "partition": {}},
            {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "hour", "grain": "day"}}}},
            {"assetKey": DIM},
        ],
        "rollup": [
            {"assetKey": ORDERS, "partition": {}},
            {
                "assetKey": CLICKS,
                "partition": {"fields": {"dt": {"field": "hour", "grain": "day", "complete": {"from": 9, "to": 11}}}},
            },
            {"assetKey": DIM},
        ],
        "fan": [
            {"assetKey": ORDERS, "partition": {"fields": {"hr": {"field": "dt", "grain": "day", "fanOut": True}}}},
            {"assetKey": CLICKS, "partition": {"fields": {"hr": {"field": "hour", "grain": "hour"}}}},
        ],
    }
    by = {"plain": ["dt", "region"], "rollup": ["dt"], "fan": ["hr"]}[rule_id]
    policy: dict[str, Any] = {"mode": mode}
    if interval:
        policy["minIntervalSeconds"] = interval
    return parse_rule(
        rule_id,
        {
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": policy,
            "groups": [{"groupId": "g", "partitionBy": by, "members": members[rule_id]}],
        },
    )


def key_text(asset: str, key: Key) -> str:
    if asset == ORDERS:
        return f"dt={key[0]}/region={key[1]}"
    return f"hour={key[0]}-{key[1]}/region={key[2]}"


# --- the model: each rule's partitions, and which commits each member's units are -------------------------------

Partition = tuple[str, ...]  # plain: (day, region); rollup: (day,); fan: (day, hh)


def universe(rule_id: str) -> list[Partition]:
    if rule_id == "plain":
        return [(d, r) for d in DAYS for r in REGIONS]
    if rule_id == "rollup":
        return [(d,) for d in DAYS]
    return [(d, f"{h:02d}") for d in DAYS for h in range(24)]


def partition_text(rule_id: str, p: Partition) -> str:
    if rule_id == "plain":
        return f"dt={p[0]}/region={p[1]}"
    if rule_id == "rollup":
        return f"dt={p[0]}"
    return f"hr={p[0]}-{p[1]}"


def units(rule_id: str, asset: str, p: Partition) -> list[Callable[[Key], bool]]:
    """Which keys of ``asset`` each unit of the member's value for ``p`` is made of (one unit but for the rollup)."""
    if rule_id == "plain":
        if asset == ORDERS:
            return [lambda k: k == p]
        return [lambda k: (k[0], k[2]) == p]
    if rule_id == "rollup":
        if asset == ORDERS:
            return [lambda k: k[0] == p[0]]
        return [lambda k, h=h: k[:2] == (p[0], h) for h in ROLLED]  # type: ignore[misc]
    if asset == ORDERS:
        return [lambda k: k[0] == p[0]]  # the fan-out: the hour's day
    return [lambda k: k[:2] == p]


@dataclass(frozen=True)
class Commit:
    asset: str
    sid: int  # its order too (paimon's snapshot id, iceberg's sequence number)
    keys: tuple[Key, ...]
    data: bool  # False: a compaction


@dataclass(frozen=True)
class Claim:
    trigger: Trigger
    at: int


@dataclass(frozen=True)
class Record:
    """A stream record, and the DynamoDB item it is a record of (one item's records arrive in order)."""

    item: tuple[str, ...]
    change: StateChange


# --- the fakes, recording claims and failing a write on demand ------------------------------------------------------


class Faults:
    """The n-th store write of the next call fails, before it applied or after (its answer lost); or, just before
    it applies, a racing resolver invocation runs to its end (``racer``): the write is then planned on reads that
    the racer has made stale."""

    def __init__(self) -> None:
        self.at: int | None = None
        self.after = False
        self.count = 0
        self.racer: Callable[[], Any] | None = None

    def arm(self, at: int, after: bool = False, racer: Callable[[], Any] | None = None) -> None:
        self.at, self.after, self.count, self.racer = at, after, 0, racer

    def write(self, what: str, apply: Callable[[], Any]) -> Any:
        if self.at is None:
            return apply()
        self.count += 1
        hit = self.count == self.at
        if hit and self.racer is not None:
            racer, self.at, self.racer = self.racer, None, None
            racer()
            return apply()
        if hit and not self.after:
            self.at = None
            raise ConnectionError(f"injected: {what} failed before it applied")
        answer = apply()
        if hit:
            self.at = None
            raise ConnectionError(f"injected: {what} applied, its answer lost")
        return answer


class Triggers(InMemoryTriggerStore):
    def __init__(self, faults: Faults, clock: Callable[[], int]) -> None:
        super().__init__()
        self.faults = faults
        self.clock = clock
        self.claims: list[Claim] = []

    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        def apply() -> ClaimResult:
            result = super(Triggers, self).claim(trigger, cursor, expected)
            if result.outcome is ClaimOutcome.CLAIMED:
                self.claims.append(Claim(trigger, self.clock()))
            return result

        answer: ClaimResult = self.faults.write("claim", apply)
        return answer


class Partitions(InMemoryPartitionStore):
    def __init__(self, faults: Faults) -> None:
        super().__init__()
        self.faults = faults

    def advance(self, facts: Any, now_ms: int) -> Any:
        return self.faults.write("facts", lambda: super(Partitions, self).advance(facts, now_ms))

    def mark_pending(self, rule_id: str, group_id: str, partitions: Any, now_ms: int) -> None:
        self.faults.write("mark", lambda: super(Partitions, self).mark_pending(rule_id, group_id, partitions, now_ms))

    def clear_pending(self, rule_id: str, group_id: str, marks: Any) -> None:
        self.faults.write("clear", lambda: super(Partitions, self).clear_pending(rule_id, group_id, marks))


class Queue(InMemoryWorkQueue):
    def __init__(self, faults: Faults) -> None:
        super().__init__()
        self.faults = faults

    def send(self, messages: list[dict[str, Any]]) -> int:
        sent: int = self.faults.write("send", lambda: super(Queue, self).send(messages))
        return sent


# --- the machine -------------------------------------------------------------------------------------------------


class PartitionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = START
        self.faults = Faults()
        self.store = InMemoryAssetStore()
        self.triggers = Triggers(self.faults, lambda: self.now)
        self.partitions = Partitions(self.faults)
        self.queue = Queue(self.faults)
        self.container = wiring.in_memory(
            Settings(),
            asset_store=self.store,
            trigger_store=self.triggers,
            partition_store=self.partitions,
            resolver_queue=self.queue,
        )
        self.stream: list[Record] = []
        self.commits: list[Commit] = []
        self.events: list[AssetEvent] = []  # every commit pushed, for duplicates
        self.next_sid = {ORDERS: 10, CLICKS: 10, DIM: 10}
        self.used: dict[str, set[int]] = {k: set() for k in (ORDERS, CLICKS, DIM)}
        self.modes: dict[str, str] = {}
        self.intervals: dict[str, int] = {}
        self.checked = 0
        self.handled = 0  # queue messages handed over

    @initialize(
        modes=st.tuples(*[st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"])] * 3),
        intervals=st.tuples(*[st.sampled_from([0, INTERVAL_S])] * 3),
        max_facts=st.integers(1, 30),
        max_claims=st.integers(1, 3),
        max_partition_claims=st.integers(1, 4),
        page=st.integers(2, 8),
        gate=st.sampled_from([True, True, True, False]),
    )
    def install(
        self,
        modes: tuple[str, ...],
        intervals: tuple[int, ...],
        max_facts: int,
        max_claims: int,
        max_partition_claims: int,
        page: int,
        gate: bool,
    ) -> None:
        c = self.container
        for rule_id, mode, interval in zip(RULE_IDS, modes, intervals, strict=True):
            self.modes[rule_id], self.intervals[rule_id] = mode, interval
            c.rule_store.put_rule(_rule(rule_id, mode, interval), self.now)
        limits = ResolverLimits(
            max_facts=max_facts,
            max_claims_per_group=max_claims,
            max_partition_claims=max_partition_claims,
            pending_page=page,
        )
        self.limits = limits
        resolver = resolve_asset_change(
            ResolverStores(
                c.rule_store,
                c.state_reader,
                c.trigger_store,
                c.state_history,
                c.deferral_store,
                partitions=c.partition_store,
                resolver_queue=c.resolver_queue,
            ),
            limits=limits,
            clock=lambda: self.now,
            observer=None,
        )
        c.overrides["resolver"] = resolver
        late = LateSnapshotNotice(c.rule_store, c.trigger_store, c.state_history)
        c.overrides["ingest"] = ingest_events(self.store, clock=lambda: self.now, late=late)
        self.sweeper = SweepDeferred(c.deferral_store, clock=lambda: self.now)
        if gate:  # the gate has a version from the start (else until its first commit, nothing runs)
            self._commit(DIM, [], True, 0)
        label(f"modes {modes}, intervals {intervals}")

    @property
    def resolve(self) -> ResolveAssetChange:
        resolver: ResolveAssetChange = self.container.resolver
        return resolver

    # --- the world ---------------------------------------------------------------------------------------------

    def _push(self, event: AssetEvent) -> None:
        before = self.store.get_state(event.asset_key)
        result = self.container.ingest.ingest(event, SourceType.PUSH)
        if result.status is not IngestStatus.DUPLICATE:
            record = snapshot_record(event)
            item = ("event", event.asset_key, str(event.snapshot_id))
            self.stream.append(Record(item, StateChange(event.asset_key, snapshot=record, partitions=event.partitions)))
        after = self.store.get_state(event.asset_key)
        if after is not None and (before is None or before.version != after.version):
            item = ("state", event.asset_key)
            if before is None:  # moto emits a keys-only INSERT before the real one
                self.stream.append(Record(item, StateChange(event.asset_key, None)))
            self.stream.append(Record(item, StateChange(event.asset_key, after)))

    def _commit(self, asset: str, keys: list[Key], data: bool, late: int) -> None:
        top = self.next_sid[asset]
        newest = top - 10
        free = [s for s in range(newest - 9, newest) if s not in self.used[asset] and s > 0]
        if late and free:
            sid = free[-min(late, len(free))]  # older than the newest: its push comes late
        else:
            sid = top
            self.next_sid[asset] += 10
        self.used[asset].add(sid)
        ordered = tuple(sorted(set(keys)))
        event = AssetEvent(
            eventType="SNAPSHOT_COMMITTED",
            assetKey=asset,
            snapshotId=sid,
            sequenceNumber=sid if asset == CLICKS else None,
            partitions=sorted({key_text(asset, k) for k in ordered}) if asset != DIM else None,
            commitKind=None if data else "COMPACT",
        )
        self.commits.append(Commit(asset, sid, ordered, data))
        self.events.append(event)
        self._push(event)

    @rule(
        keys=st.lists(st.tuples(st.sampled_from(DAYS), st.sampled_from(REGIONS)), min_size=1, max_size=3),
        data=st.sampled_from([True, True, True, False]),
        late=st.sampled_from([0, 0, 0, 1, 3]),
    )
    def commit_orders(self, keys: list[Key], data: bool, late: int) -> None:
        self._commit(ORDERS, keys, data or late > 0, late)

    @rule(
        keys=st.lists(
            st.tuples(st.sampled_from(DAYS), st.sampled_from(HOURS), st.sampled_from(REGIONS)), min_size=1, max_size=4
        ),
        data=st.sampled_from([True, True, True, False]),
        late=st.sampled_from([0, 0, 0, 1, 3]),
    )
    def commit_clicks(self, keys: list[Key], data: bool, late: int) -> None:
        self._commit(CLICKS, keys, data or late > 0, late)

    @rule()
    def commit_gate(self) -> None:
        self._commit(DIM, [], True, 0)

    @precondition(lambda self: bool(self.events))
    @rule(data=st.data())
    def push_again(self, data: st.DataObject) -> None:
        """A commit pushed again (a retried push, a poll after the push): a duplicate."""
        self._push(data.draw(st.sampled_from(self.events), label="again"))

    @rule(wait_s=st.integers(0, 90))
    def tick(self, wait_s: int) -> None:
        self.now += wait_s * 1000

    # --- the stream ----------------------------------------------------------------------------------------------

    def _take(self, data: st.DataObject) -> list[StateChange]:
        """Some of the stream's records (a prefix of each item's), in any order across items, each item's in order."""
        taken: list[Record] = []
        skipped: set[tuple[str, ...]] = set()
        left: list[Record] = []
        for record in self.stream:
            if record.item in skipped or not data.draw(st.booleans(), label="take"):
                skipped.add(record.item)
                left.append(record)
            else:
                taken.append(record)
        self.stream = left
        by_item: dict[tuple[str, ...], list[Record]] = {}
        for record in taken:
            by_item.setdefault(record.item, []).append(record)
        batch: list[StateChange] = []
        while by_item:
            item = data.draw(st.sampled_from(sorted(by_item)), label="next item")
            batch.append(by_item[item].pop(0).change)
            if not by_item[item]:
                del by_item[item]
        return batch

    @precondition(lambda self: bool(self.stream))
    @rule(data=st.data(), how=st.sampled_from(["once", "twice", "split", "tail"]))
    def deliver(self, data: st.DataObject, how: str) -> None:
        batch = self._take(data)
        if how == "split":
            cut = data.draw(st.integers(0, len(batch)), label="cut")
            self.resolve(batch[:cut])
            self.resolve(batch[cut:])
        elif how == "tail":  # records repeated inside one batch
            self.resolve(batch + batch[: data.draw(st.integers(0, len(batch)), label="tail")])
        else:
            self.resolve(batch)
            if how == "twice":
                self.resolve(batch)

    @precondition(lambda self: bool(self.stream))
    @rule(
        data=st.data(),
        failure=st.sampled_from(["deadline", "before", "after"]),
        at=st.integers(1, 12),
        retried=st.booleans(),
    )
    def deliver_failing(self, data: st.DataObject, failure: str, at: int, retried: bool) -> None:
        """An invocation fails midway (its deadline, or a store write failing before or after it applied): Lambda
        hands the batch over again, or gives it up (its rechecks and carried partitions take over)."""
        batch = self._take(data)
        try:
            if failure == "deadline":
                left = iter([60_000] * at)
                self.resolve(batch, time_left=lambda: next(left, 0))
            else:
                self.faults.arm(at, after=failure == "after")
                self.resolve(batch)
        except (OutOfTime, ConnectionError):
            label(f"invocation failed: {failure}")
            if retried:
                self.resolve(batch)
        finally:
            self.faults.at, self.faults.racer = None, None

    @precondition(lambda self: bool(self.stream))
    @rule(data=st.data(), at=st.integers(1, 4), same=st.booleans())
    def deliver_racing(self, data: st.DataObject, at: int, same: bool) -> None:
        """Two resolvers at once: while one invocation is between its reads and its ``at``-th write, another handles
        the same batch (a redelivery racing the first delivery), or the stream's next records, to its end."""
        batch = self._take(data)
        other = batch if same or not self.stream else self._take(data)
        raced: list[bool] = []

        def racer() -> None:
            raced.append(True)
            self.resolve(other)

        self.faults.arm(at, racer=racer)
        try:
            self.resolve(batch)
        finally:
            self.faults.at, self.faults.racer = None, None
        if not raced:  # the first invocation made fewer writes: the other one comes after it
            self.resolve(other)
        label(f"raced: {bool(raced)}")

    # --- the resolver's queue ----------------------------------------------------------------------------------

    def _hand(self, message: dict[str, Any], fail: str | None = None, at: int = 1) -> bool:
        """One queue message to the resolver's handler (one an invocation); whether it succeeded."""
        record = {"messageId": f"m{self.handled}", "body": json.dumps(message), "eventSource": "aws:sqs"}
        self.handled += 1
        time_left = None
        if fail == "deadline":
            left = iter([60_000] * at)
            time_left = lambda: next(left, 0)  # noqa: E731
        elif fail is not None:
            self.faults.arm(at, after=fail == "after")
        try:
            answer = handle_resolver_queue({"Records": [record]}, self.container, time_left=time_left)
        finally:
            self.faults.at = None
        return answer == {"batchItemFailures": []}

    @precondition(lambda self: bool(self.queue.messages))
    @rule(data=st.data(), count=st.integers(1, 6))
    def work_queue(self, data: st.DataObject, count: int) -> None:
        """Some queue messages, in any order; some received again (not deleted), some failing (received again)."""
        for _ in range(count):
            if not self.queue.messages:
                return
            at = data.draw(st.integers(0, len(self.queue.messages) - 1), label="message")
            message = self.queue.messages[at]
            again = data.draw(st.booleans(), label="again")
            fail = data.draw(st.sampled_from([None, None, None, "deadline", "before", "after"]), label="fail")
            ok = self._hand(message, fail, data.draw(st.integers(1, 6), label="fail at"))
            if ok and not again:
                self.queue.messages.remove(message)

    @rule(wait_s=st.integers(0, 150))
    def sweep(self, wait_s: int) -> None:
        """The deferral sweep: cooldowns ending, a failed batch's rechecks."""
        self.now += wait_s * 1000
        due = self.sweeper()
        if due:
            self.resolve(deferred=due)

    # --- explain ---------------------------------------------------------------------------------------------------

    @rule(rule_id=st.sampled_from(RULE_IDS), by_deferral=st.booleans())
    def explain(self, rule_id: str, by_deferral: bool) -> None:
        """Explain, then the next resolver invocation with no new input (evaluate now; or, when the stream and the
        queue hold nothing, the group's deferral coming due, as the stream hands it over), with the queue messages
        it sends: explain's READY partitions are exactly those claimed, with the pins it shows."""
        said = self.container.explain_rule.explain(rule_id)["groups"][0]
        shown = {line["partition"]: line for line in said["partitions"]}
        assert said["pendingPartitions"] == self.partitions.count_pending(rule_id, "g")
        before, queued = len(self.triggers.claims), list(self.queue.messages)
        if by_deferral and not self.stream and not self.queue.messages:
            self.resolve(deferred=[Deferral(rule_id, "g", self.now)])
        else:
            stored = self.container.rule_store.get_rule(rule_id)
            assert stored is not None
            self.resolve.evaluate(stored.rule)
        own = len(self.triggers.claims)  # the invocation's own claims end here; its queue messages' follow
        self.queue.messages = self.queue.messages[len(queued) :]  # what this invocation sent
        while self.queue.messages:
            assert self._hand(self.queue.messages.pop(0))
        self.queue.messages = queued
        claimed, carried = self._first_claims(rule_id, before, own)
        ready = {p for p, line in shown.items() if line["status"] == "READY"}
        if said.get("partialCommits"):
            # explain took the members' newest commits only up to the bound (and says so): what it calls READY is
            # claimed; the queue resolves the keys past it, which explain did not see
            assert ready <= set(claimed), f"explain said READY {sorted(ready)}; claimed {sorted(claimed)}"
        else:
            assert ready == set(claimed) & set(shown), (
                f"explain said READY {sorted(ready)}; the resolver claimed {sorted(set(claimed) & set(shown))} of "
                f"those shown: {[(p, line['status'], line['reason']) for p, line in shown.items()]}"
            )
        unseen = {(c["assetKey"], c["snapshotId"]) for c in said.get("partialCommits") or []}
        for p in ready:
            pins, mine = shown[p]["pins"], claimed[p]
            if p in carried and unseen:
                # A READY partition past the invocation's claims bound is carried to the queue behind the slices of
                # the commits explain took in part (sent first, before any write): such a slice may claim it first,
                # newer. Then a pin may differ from explain's only by being one of those commits.
                assert len(mine) == len(pins) and all(
                    c == s or (c["assetKey"] == s["assetKey"] and (c["assetKey"], c["snapshotId"]) in unseen)
                    for c, s in zip(mine, pins, strict=True)
                ), f"{p}: explain showed {pins}, claimed {mine} (from the queue; taken in part: {sorted(unseen)})"
            else:
                assert pins == mine, f"{p}: explain showed {pins}, claimed {mine}"
        label(f"explain: {len(ready)} ready of {len(shown)} shown")

    def _first_claims(self, rule_id: str, before: int, own: int) -> tuple[dict[str | None, list[Any]], set[str | None]]:
        """Each partition of ``rule_id`` claimed since ``before`` with the pins of its first claim, and those whose
        first claim came from a queue message (at ``own`` or later) rather than from the invocation itself."""
        claimed: dict[str | None, list[Any]] = {}
        carried: set[str | None] = set()
        for at, c in enumerate(self.triggers.claims[before:], start=before):
            if c.trigger.rule_id != rule_id or c.trigger.partition in claimed:
                # a slice past the bound wakes every rule mapping the asset; and the first claim of a partition is
                # explain's (a slice past the bound may claim it again, newer)
                continue
            claimed[c.trigger.partition] = [json_form(p) for p in c.trigger.inputs]
            if at >= own:
                carried.add(c.trigger.partition)
        return claimed, carried

    # --- safety --------------------------------------------------------------------------------------------------

    def _touches(self, rule_id: str, asset: str, p: Partition, sid: int) -> bool:
        found = [c for c in self.commits if c.asset == asset and c.sid == sid and c.data]
        return bool(found) and any(u(k) for u in units(rule_id, asset, p) for k in found[0].keys)

    @invariant()
    def one_claim_per_combination(self) -> None:
        claims = self.triggers.claims
        keys = [c.trigger.trigger_key for c in claims]
        assert len(keys) == len(set(keys)), "a trigger key was claimed twice"
        combos = [
            (
                c.trigger.rule_id,
                c.trigger.group_id,
                c.trigger.partition,
                tuple(sorted(tuple(p.identity()) for p in c.trigger.inputs)),
            )
            for c in claims
        ]
        assert len(combos) == len(set(combos)), "a partition ran twice with the same pins"
        for c in claims[self.checked :]:
            t = c.trigger
            assert t.partition is not None, "a partitioned group claimed no partition"
            p = self._parse(t.rule_id, t.partition)
            pins = {pin.asset_key: pin.snapshot_id for pin in t.inputs}
            for asset in PARTITIONED:
                sid = pins.get(asset)
                assert sid is not None and self._touches(t.rule_id, asset, p, sid), (
                    f"{t.rule_id} {t.partition} pinned {asset} {sid}, no data commit touching it"
                )
            if t.rule_id == "rollup":
                assert all(
                    any(u(k) for c2 in self.commits if c2.asset == CLICKS and c2.data for k in c2.keys)
                    for u in units("rollup", CLICKS, p)
                ), f"rollup ran {t.partition} before each of its hours had a data commit"
            if t.rule_id != "fan":
                assert pins.get(DIM) in self.used[DIM], "the gate's pin is no version of it"
        self.checked = len(claims)
        runs: dict[tuple[str, str | None], list[Claim]] = {}
        for c in claims:
            runs.setdefault((c.trigger.rule_id, c.trigger.partition), []).append(c)
        for (rule_id, partition), mine in runs.items():
            for old, new in itertools.pairwise(mine):
                was = {p.asset_key: p.snapshot_id or 0 for p in old.trigger.inputs}
                now = {p.asset_key: p.snapshot_id or 0 for p in new.trigger.inputs}
                assert all(now[a] >= was[a] for a in PARTITIONED), f"{rule_id} {partition} went back: {was} -> {now}"
                moved = [now[a] > was[a] for a in PARTITIONED]
                if self.modes[rule_id] == "ALL_UPDATED":
                    assert all(moved), f"{rule_id} {partition} ran before every member touched it: {was} -> {now}"
                else:
                    assert any(moved), f"{rule_id} {partition} ran again with nothing new: {was} -> {now}"
                assert new.at - old.at >= self.intervals[rule_id] * 1000, f"{rule_id} {partition} ran in cooldown"

    def _parse(self, rule_id: str, partition: str) -> Partition:
        found = [p for p in universe(rule_id) if partition_text(rule_id, p) == partition]
        assert found, f"{rule_id} ran {partition}, no partition of the model"
        return found[0]

    # --- liveness ----------------------------------------------------------------------------------------------

    def _newest(self, rule_id: str, asset: str, p: Partition) -> tuple[int | None, int | None]:
        """The member's newest data commit touching ``p`` (a rollup: its newest unit's) once complete, and the newest
        touching any unit of it, complete or not."""
        each = [
            max(
                (c.sid for c in self.commits if c.asset == asset and c.data and any(u(k) for k in c.keys)), default=None
            )
            for u in units(rule_id, asset, p)
        ]
        some = [s for s in each if s is not None]
        touched = max(some, default=None)
        return (touched if len(some) == len(each) else None), touched

    def drain(self) -> None:
        """Everything left: the stream's records, the queue's messages, and the sweeps until nothing is due."""
        for _ in range(100):
            if self.stream:
                batch, self.stream = [r.change for r in self.stream], []
                self.resolve(batch)
            while self.queue.messages:
                assert self._hand(self.queue.messages.pop(0))
            self.now += 2 * max(INTERVAL_S * 1000, self.limits.retry_ms)
            due = self.sweeper()
            if not due:
                return
            self.resolve(deferred=due)
        raise AssertionError("the deferrals kept coming due")

    def teardown(self) -> None:
        if not self.modes:
            return
        self.drain()
        self.one_claim_per_combination()
        gate = bool(self.used[DIM])
        target(float(len(self.triggers.claims)), label="claims")  # steer towards histories that run a lot
        label(f"claims: {min(len(self.triggers.claims) // 5 * 5, 20)}+")
        label(f"commits: {min(len(self.commits) // 5 * 5, 20)}+")
        for rule_id in RULE_IDS:
            last: dict[str, dict[str, int]] = {}
            for c in self.triggers.claims:
                if c.trigger.rule_id == rule_id:
                    assert c.trigger.partition is not None
                    last[c.trigger.partition] = {p.asset_key: p.snapshot_id or 0 for p in c.trigger.inputs}
            gated = gate or rule_id == "fan"
            expected_pending: set[str] = set()
            incomplete: set[str] = set()
            for p in universe(rule_id):
                text = partition_text(rule_id, p)
                ran = last.get(text, {})
                newest = {a: self._newest(rule_id, a, p) for a in PARTITIONED}
                moved = {a: t is not None and t > ran.get(a, -1) for a, (_, t) in newest.items()}
                if any(moved.values()):
                    expected_pending.add(text)
                complete = gated and all(full is not None for full, _ in newest.values())
                if not complete:
                    incomplete.add(text)
                    continue
                holds = all(moved.values()) if self.modes[rule_id] == "ALL_UPDATED" else any(moved.values())
                assert not holds, (
                    f"lost: {rule_id} {text} is ready in the model (newest {newest}, last ran with {ran or None}) "
                    "and has no claim for it"
                )
            pending = set(self.partitions.waiting.get((rule_id, "g"), {}))
            assert pending == expected_pending, (
                f"{rule_id}: pending {sorted(pending)}, the model says {sorted(expected_pending)}"
            )
            said = self.container.explain_rule.explain(rule_id)["groups"][0]
            assert said["pendingPartitions"] == len(expected_pending)
            shown = {line["partition"]: line for line in said["partitions"]}
            assert not any(line["status"] == "READY" for line in shown.values()), "a partition was left READY"
            if len(shown) < EXPLAIN_PAGE:  # the page was not cut: every pending partition is on it
                missing = sorted(expected_pending - set(shown))
                assert not missing, f"{rule_id}: pending {missing} not shown by explain: {sorted(shown)}"
            for text in expected_pending & set(shown):
                if text in incomplete and gated:
                    assert shown[text]["status"] == "WAITING_FOR_PARTITION", (text, shown[text])
                elif text not in incomplete:
                    assert shown[text]["status"] == "WAITING_FOR_UPDATE", (text, shown[text])
            label(f"{rule_id}: {'some' if last else 'no'} runs, {'some' if expected_pending else 'none'} pending")


PartitionMachine.TestCase.settings = settings(
    max_examples=examples(80),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    # no explain phase: it traces every line of a failing example (slow on Python 3.11), and shrinking is slow enough
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)


def setup_module() -> None:
    logger.setLevel("CRITICAL")  # claims, carried partitions and the injected failures log a line each


def teardown_module() -> None:
    logger.setLevel("INFO")


TestPartitionStateMachine = PartitionMachine.TestCase
