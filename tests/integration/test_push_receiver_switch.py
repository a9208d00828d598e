"""PushReceiver=Disabled (LAKEHOOK_PUSH_ENABLED=false): POST /asset-events answers 403 naming the switch and records
nothing; the same stack with it on takes the push."""

from __future__ import annotations

import json

import pytest

from lakehook.container import Container
from tests.conftest import ADMIN_TOKEN
from tests.support import FakeLambdaContext, api_event, load_handler

ASSET = "custom://erp/orders"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
EVENT = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ASSET, "snapshotId": 1}


@pytest.mark.parametrize("enabled", [False, True])
def test_the_push_receiver_switch(container: Container, enabled: bool) -> None:
    container.settings.push_enabled = enabled
    answer = load_handler("ingest_api")(api_event("POST", "/asset-events", EVENT, headers=ADMIN), FakeLambdaContext())
    body = json.loads(answer["body"])
    if enabled:
        assert answer["statusCode"] == 200 and body["results"][0]["status"] == "ACCEPTED", body
        assert container.asset_store.get_state(ASSET) is not None
        return
    assert answer["statusCode"] == 403, body
    assert "push receiver is off" in json.dumps(body) and "PushReceiver=Disabled" in json.dumps(body)
    assert container.asset_store.get_state(ASSET) is None
