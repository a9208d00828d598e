"""Each format's poller wedged (the table's storage gone from under it, or its read hanging without raising) on real
Iceberg, Paimon, Delta and Hudi tables and DynamoDB on moto: explain says "cannot decide: <asset> is BLOCKED since …
because …" within one poll period (a hang: once the poll has run past the hang bound), and once the storage is back
(the read returns) every version committed meanwhile flows in, in order, and explain is back to the resolver's
reason."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lakehook.answers.base import SourceHealthAnswer
from lakehook.domain.assets import AssetFormat, AssetRegistration
from lakehook.domain.snapshots import PollStatus
from lakehook.domain.source_health import Health, source_health
from lakehook.domain.time import now_ms
from lakehook.ports.lakehouse import PollStatusStore, SnapshotBatch, SnapshotSource
from lakehook.usecases.poll import PollAsset, PollAssets, PollOutcome
from tests.pollers import FORMATS, Lake, make_table

pytestmark = pytest.mark.integration

PERIOD = 60_000
PUSHED = "custom://ods/pushed"


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.value for f in FORMATS])
def test_a_wedged_poller_shows_in_explain_within_one_poll_and_repair_brings_every_version_in_order(
    fmt: AssetFormat, tmp_path: Path, table: Any
) -> None:
    lake = Lake(table)
    storage = tmp_path / "lake"
    orders = make_table(fmt, storage)
    c = lake.container
    c.asset_registry.put_asset(orders.asset, 0)
    c.asset_registry.put_asset(AssetRegistration.model_validate({"assetKey": PUSHED, "format": "custom"}), 0)
    members = [{"assetKey": orders.key}, {"assetKey": PUSHED}]  # the pushed one never comes: the group waits
    body = {"groups": [{"groupId": "g", "members": members}], "target": {"type": "eventbridge", "eventBusName": "b"}}
    c.put_rule.put("daily", body)
    clock = [now_ms()]
    poller = PollAsset(lake.sources, lake.watermarks, lake.ingest, clock=lambda: clock[0])
    poll = PollAssets(poller, lake.statuses, clock=lambda: clock[0])

    orders.commit(1)
    poll([orders.asset])
    waiting = c.explain_rule.explain("daily")["groups"][0]["reason"]
    assert not waiting.startswith("cannot decide")
    missed = [orders.commit(2), orders.commit(3)]  # committed, then the poller is wedged before it reads them
    away = storage.rename(tmp_path / "away")

    clock[0] += PERIOD  # one poll period
    (failed,) = poll([orders.asset])
    assert failed.outcome is PollOutcome.FAILED
    health = source_health(lake.statuses.get(orders.key))
    assert health is not None and health.state is Health.BLOCKED and health.since == clock[0]
    group = c.explain_rule.explain("daily")["groups"][0]
    assert group["reason"].startswith(f"cannot decide: {orders.key} is BLOCKED since ")
    assert group["waitingReason"] == waiting and group["cannotDecide"][0]["blockedBy"] == health.blocked_by
    listed = {a["assetKey"]: a for a in c.list_assets(100)["items"]}  # one BatchGetItem of poll statuses
    assert (
        listed[orders.key]["sourceHealth"] == SourceHealthAnswer.from_domain(health).dump()
        and "sourceHealth" not in listed[PUSHED]
    )

    away.rename(storage)  # repaired
    status = lake.statuses.get(orders.key)
    assert status is not None and status.next_attempt_at is not None
    clock[0] = status.next_attempt_at
    (repaired,) = poll([orders.asset])
    assert list(repaired.snapshot_ids) == missed
    assert sorted(lake.snapshot_ids(orders.key)) == sorted(orders.committed())
    healed = source_health(lake.statuses.get(orders.key))
    assert healed is not None and healed.state is Health.HEALTHY
    assert c.explain_rule.explain("daily")["groups"][0]["reason"] == waiting


class Hanging(SnapshotSource):
    """The format's own source, whose read of new snapshots blocks (an endpoint that accepts and never answers)
    while ``hang`` is set, until ``release`` is."""

    def __init__(self, inner: SnapshotSource) -> None:
        self.inner = inner
        self.hang = threading.Event()
        self.release = threading.Event()

    def pointer(self, source: Any) -> str:
        return self.inner.pointer(source)

    def snapshots_since(self, source: Any, cursor: Any, pointer: str, **kwargs: Any) -> SnapshotBatch:
        if self.hang.is_set():
            assert self.release.wait(30), "the test never released the hung read"
        return self.inner.snapshots_since(source, cursor, pointer, **kwargs)


class Signalling(PollStatusStore):
    """The stack's poll status store (DynamoDB on moto); ``marked`` is set once a status saying a poll hangs is
    written to it."""

    def __init__(self, inner: PollStatusStore) -> None:
        self.inner = inner
        self.marked = threading.Event()

    def get(self, asset_key: str) -> PollStatus | None:
        return self.inner.get(asset_key)

    def put(self, status: PollStatus) -> None:
        self.inner.put(status)
        if status.hung_since is not None:
            self.marked.set()


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.value for f in FORMATS])
def test_a_poller_that_hangs_without_raising_shows_in_explain_while_it_hangs_and_every_version_flows_after(
    fmt: AssetFormat, tmp_path: Path, table: Any
) -> None:
    lake = Lake(table)
    orders = make_table(fmt, tmp_path / "lake")
    c = lake.container
    c.asset_registry.put_asset(orders.asset, 0)
    c.asset_registry.put_asset(AssetRegistration.model_validate({"assetKey": PUSHED, "format": "custom"}), 0)
    members = [{"assetKey": orders.key}, {"assetKey": PUSHED}]
    body = {"groups": [{"groupId": "g", "members": members}], "target": {"type": "eventbridge", "eventBusName": "b"}}
    c.put_rule.put("daily", body)
    wrapped: dict[AssetFormat, Hanging] = {}

    def sources(f: AssetFormat) -> SnapshotSource:
        return wrapped.setdefault(f, Hanging(lake.sources(f)))

    statuses = Signalling(lake.statuses)
    poll = PollAssets(PollAsset(sources, lake.watermarks, lake.ingest), statuses, hang_after_ms=1_000)
    orders.commit(1)
    poll([orders.asset])
    waiting = c.explain_rule.explain("daily")["groups"][0]["reason"]
    missed = [orders.commit(2), orders.commit(3)]
    source = wrapped[fmt]
    statuses.marked.clear()  # a slow first read of a real table may have been marked (and cleared) already
    assert lake.health(orders.key) is Health.HEALTHY
    source.hang.set()
    with ThreadPoolExecutor(1) as pool:
        hung = pool.submit(poll, [orders.asset])
        assert statuses.marked.wait(30), "the hung poll was never marked"
        assert lake.health(orders.key) is Health.BLOCKED and not hung.done()  # nothing raised: the mark says it
        group = c.explain_rule.explain("daily")["groups"][0]
        assert group["reason"].startswith(f"cannot decide: {orders.key} is BLOCKED since ")
        assert (
            "it hangs without raising" in group["reason"] and group["cannotDecide"][0]["blockedBy"] == "POLLER_FAILING"
        )
        source.hang.clear()
        source.release.set()
        (finished,) = hung.result(30)
    assert list(finished.snapshot_ids) == missed  # every version committed meanwhile, in order
    assert lake.health(orders.key) is Health.HEALTHY
    assert c.explain_rule.explain("daily")["groups"][0]["reason"] == waiting
