"""Property: a crash after any request of a delivery, then copies and redeliveries, ends in the no-crash state.

Every event type goes through ``IngestEvents`` on the DynamoDB adapter (in-process moto) with its coverage
store and a verification queue. In the crashing run a delivery may die after any one of its requests (the
refused or accepted record, the coverage add, the state update, the late part of a late snapshot, the
touch of a late verdict, the verification request, the settled note): the request took effect, then the
process is gone. Every delivery cut short is delivered again later, as a poller's next pass or a
producer's retry would, and copies arrive before and after. The same deliveries without any crash are the
reference: the final read model of every asset, its coverage and its event log must be the same, and every
manifest left pending verification must have had its verification asked for. (Which superseded manifests
were sent for verification on the way may differ: a redelivery comes later than the delivery it repeats,
so a sealed manifest that advanced the state in the reference may be stale by its redelivery, once its
interruption or a later manifest is in. Its verification is not needed then, and the verifier ignores a
manifest that is not the asset's current one.) A copy of an event delivered to the end must cost one request.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore
from lakehook.domain.events import SourceType
from lakehook.domain.state import ManifestStatus
from lakehook.ports.queue import WorkQueue
from lakehook.usecases.coverage import RecordCoverage
from tests.hypothesis_profiles import examples
from tests.integration.test_state_forward_properties import ASSETS, BASE_MS, MINUTE, TICK, Spec, specs
from tests.wiring import ingest_events

_examples = itertools.count()
# what the touches write to wake the resolver: which copy touched last depends on the order of the deliveries
_TOUCHES = ("version", "updated_at", "last_event_id", "last_coverage_start", "last_coverage_end")


class Crash(Exception):
    """The process dies here; the request that just returned took effect."""


@dataclass
class Fuse:
    """Counts a delivery's requests (DynamoDB calls and queue sends) and blows after the armed number."""

    armed: int | None = None
    seen: int = 0
    total: int = 0

    def arm(self, after: int | None) -> None:
        self.armed, self.seen = after, 0

    def tick(self, **_: Any) -> None:
        self.seen += 1
        self.total += 1
        if self.armed is not None and self.seen >= self.armed:
            self.armed = None
            raise Crash


@dataclass
class FusedQueue(WorkQueue):
    """The verification queue as a list; a send is a request the fuse counts."""

    fuse: Fuse
    messages: list[dict[str, Any]] = field(default_factory=list)

    def send(self, messages: list[dict[str, Any]]) -> int:
        self.messages.extend(messages)
        self.fuse.tick()
        return len(messages)


@dataclass(frozen=True)
class Delivery:
    spec: Spec
    crash_after: int | None  # the process dies after this many of the delivery's requests (None: it finishes)
    source: SourceType


sources = st.sampled_from([SourceType.PUSH, SourceType.POLL, SourceType.RUN_COMPLETION])


@st.composite
def deliveries(draw: Any) -> list[Delivery]:
    distinct = draw(st.lists(specs, min_size=3, max_size=16, unique=True))
    copies = draw(st.lists(st.sampled_from(distinct), min_size=1, max_size=10))
    order = draw(st.permutations(distinct + copies))
    crashes = st.one_of(st.none(), st.none(), st.integers(1, 5))
    plan = [Delivery(spec, draw(crashes), draw(sources)) for spec in order]
    # Every event cut short is delivered again (a crash after its last request is no crash: it also gets one).
    completed = set()
    for delivery in reversed(plan):
        if delivery.crash_after is None:
            completed.add(delivery.spec)
        elif delivery.spec not in completed:
            plan.append(Delivery(delivery.spec, None, SourceType.POLL))
            completed.add(delivery.spec)
    return plan


@dataclass
class Run:
    """One run of a plan on the shared table, under its own asset keys."""

    run: int
    fuse: Fuse
    store: DynamoDBAssetStore
    coverage: DynamoDBCoverageStore
    queue: FusedQueue
    costs: list[tuple[Spec, bool, int]] = field(default_factory=list)  # (spec, settled before, requests)


def deliver(table: Any, plan: list[Delivery], crashing: bool) -> Run:
    fuse = Fuse()
    client = table.meta.client
    client.meta.events.register("after-call.dynamodb.*", fuse.tick)
    try:
        result = Run(next(_examples), fuse, DynamoDBAssetStore(table), DynamoDBCoverageStore(table), FusedQueue(fuse))
        clock = itertools.count(BASE_MS + TICK, TICK)  # one tick per delivery, so both runs record at the same times
        ingest = ingest_events(
            result.store,
            clock=lambda: next(clock),
            coverage=RecordCoverage(result.coverage, clock=lambda: BASE_MS),
            verifications=result.queue,
        )
        finished: set[Spec] = set()
        for delivery in plan:
            fuse.arm(delivery.crash_after if crashing else None)
            try:
                ingest.ingest(delivery.spec.event(result.run), delivery.source)
            except Crash:
                continue
            result.costs.append((delivery.spec, delivery.spec in finished, fuse.seen))
            finished.add(delivery.spec)
        fuse.arm(None)
    finally:
        client.meta.events.unregister("after-call.dynamodb.*", fuse.tick)
    return result


def observed(result: Run, asset: int) -> dict[str, Any] | None:
    key = Spec(asset, "snapshot", 0).event(result.run).asset_key
    state = result.store.get_state(key)
    if state is None:
        return None
    found = state.model_dump(exclude={"asset_key", *_TOUCHES})
    found["coverage"] = result.coverage.spans(key, 0, BASE_MS + 100 * MINUTE)
    # every distinct event is kept once; ids differ by run (the asset keys do), so compare type and version
    logged = result.store.list_events(key, limit=500).items
    found["events"] = sorted((r.event.event_type.value, str(r.event.version)) for r in logged)
    return found


def verified(result: Run) -> set[tuple[str, str]]:
    """(asset, manifest URI) of every verification asked for."""
    return {(str(m["assetKey"]).rsplit("/", 1)[-1], str(m["manifestUri"])) for m in result.queue.messages}


def pending(result: Run) -> set[tuple[str, str]]:
    """(asset, manifest URI) of every asset whose current manifest waits for its verification."""
    found = set()
    for asset in range(ASSETS):
        key = Spec(asset, "snapshot", 0).event(result.run).asset_key
        state = result.store.get_state(key)
        if state is not None and state.manifest_uri and state.manifest_status == ManifestStatus.PENDING:
            found.add((key.rsplit("/", 1)[-1], state.manifest_uri))
    return found


def sealed(plan: list[Delivery]) -> set[tuple[str, str]]:
    """(asset, manifest URI) of every sealed manifest the plan delivers."""
    return {(f"t{d.spec.asset}", f"s3://spool/m/{d.spec.version}.json") for d in plan if d.spec.kind == "sealed"}


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=deliveries())
def test_a_crash_after_any_request_ends_in_the_state_without_crashes(table: Any, plan: list[Delivery]) -> None:
    calm = deliver(table, plan, crashing=False)
    crashed = deliver(table, plan, crashing=True)
    for asset in range(ASSETS):
        assert observed(crashed, asset) == observed(calm, asset)
    assert pending(crashed) == pending(calm)
    for result in (calm, crashed):  # nothing left pending unasked, nothing asked that was never sealed
        assert pending(result) <= verified(result) <= sealed(plan)
    # a copy of an event that a delivery finished costs exactly one request: its refused record
    for result in (calm, crashed):
        assert [requests for _, settled, requests in result.costs if settled] == [1] * sum(
            settled for _, settled, _ in result.costs
        )
