"""Each format's poller wedged (the table's storage gone from under it) on real Iceberg, Paimon, Delta and Hudi tables
and DynamoDB on moto: explain says "cannot decide: <asset> is BLOCKED since … because …" within one poll period, and
once the storage is back every version committed meanwhile flows in, in order, and explain is back to the
resolver's reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakehook.domain.assets import AssetFormat, AssetRegistration
from lakehook.domain.source_health import Health, source_health
from lakehook.domain.time import now_ms
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
    assert listed[orders.key]["sourceHealth"] == health.to_api() and "sourceHealth" not in listed[PUSHED]

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
