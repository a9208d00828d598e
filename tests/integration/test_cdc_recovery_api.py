"""``cdcRecoveredTo`` through the API and the resolver on moto: the rule is checked when written (a 400 naming the
field), and a pushed ``CDC_LAG_RECOVERED`` wakes the resolver through the stream filter and starts the run it was
holding, exactly then."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.container import Container
from lakehook.handlers import handle_stream_batch
from tests.integration.test_resolver_on_moto import Stream, call, push, triggers_of

ORDERS = "paimon://lake/ods/orders"
TARGET = {"type": "eventbridge", "eventBusName": "lakehook-runs"}
RECOVERED_TO = 1_750_000_000_000


def rule_body(*members: dict[str, Any]) -> dict[str, Any]:
    return {"groups": [{"groupId": "g", "members": list(members)}], "target": TARGET}


@pytest.mark.parametrize(
    ("condition", "field"),
    [
        ({"cdcRecoveredTo": "caught-up"}, "groups.0.members.0.condition.cdcRecoveredTo"),
        ({"cdcRecoveredTo": False}, "groups.0.members.0.condition.cdcRecoveredTo"),
        ({"cdcRecoveredTo": "2025-06-01 10:00"}, "groups.0.members.0.condition.cdcRecoveredTo"),
        ({"cdcLagRecovered": True}, "groups.0.members.0.condition.cdcLagRecovered"),
        ({"cdcRecoveredTo": "window"}, "groups.0.members"),  # no windowed member in the group
    ],
)
def test_a_bad_spelling_is_a_400_naming_the_field(app: Any, condition: dict[str, Any], field: str) -> None:
    status, body = call(app, "PUT", "/rules/cdc", rule_body({"assetKey": ORDERS, "condition": condition}))
    assert status == 400, body
    assert body["field"] == field, body
    assert field.rsplit(".", 1)[-1] in body["message"] or "cdcRecoveredTo" in body["message"], body
    assert call(app, "GET", "/rules/cdc")[0] == 404  # nothing was stored


def test_a_pushed_recovery_starts_the_run_it_held(app: Any, container: Container, ddb_client: Any) -> None:
    stream = Stream(ddb_client)
    member = {"assetKey": ORDERS, "condition": {"cdcRecoveredTo": "2025-06-15T15:06:40Z"}}
    status, body = call(app, "PUT", "/rules/cdc", rule_body(member))
    assert status == 201, body
    assert body["groups"][0]["members"][0]["condition"]["cdcRecoveredTo"] == RECOVERED_TO
    stream.records()
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=7)
    push(container, "CDC_LAG_RECOVERED", ORDERS, watermark=RECOVERED_TO - 1)
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    assert triggers_of(app, "cdc") == []
    status, explained = call(app, "GET", "/rules/cdc/explain")
    (group,) = explained["groups"]
    assert group["status"] == "BLOCKED_BY_CDC_LAG", group
    assert "caught up to 2025-06-15T15:06:39.999Z; needs 2025-06-15T15:06:40Z" in group["reason"], group
    push(container, "CDC_LAG_RECOVERED", ORDERS, watermark=RECOVERED_TO)
    batch = stream.batch()
    assert batch["Records"], "the recovery's state change passes the resolver's stream filter"
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert triggers_of(app, "cdc") == [[7]]
