"""A stack on fakes for the roles tests: two rules (one under ``etl.``, one under ``mart.``), each on its own asset
with a version and a manual trigger, called through the API exactly as API Gateway calls the function."""

from __future__ import annotations

import json
from typing import Any

from lakehook import container
from lakehook.api.app import build_app
from lakehook.container import Container
from lakehook.settings import Settings
from tests import wiring
from tests.support import FakeLambdaContext, api_event

ADMIN_TOKEN = "roles-admin"
ETL_RULE, MART_RULE = "etl.daily", "mart.sales"
SALES, ODS = "iceberg://lake/sales/orders", "paimon://lake/ods/b"
RULE_ASSETS = {ETL_RULE: SALES, MART_RULE: ODS}
TARGET = {"type": "eventbridge", "eventBusName": "lakehook-runs"}


class RolesStack:
    """One fresh container on fakes, seeded; ``call`` answers (status, body)."""

    def __init__(self) -> None:
        self.container: Container = wiring.in_memory(Settings(admin_token=ADMIN_TOKEN))
        container.use(self.container)
        self.app = build_app()
        self.triggers: dict[str, str] = {}  # rule id -> the key of its manual trigger
        for rule_id, asset in RULE_ASSETS.items():
            event = {
                "eventType": "SNAPSHOT_COMMITTED",
                "assetKey": asset,
                "snapshotId": 1,
                "commitTime": 1_750_000_000_000,
            }
            self.ok("POST", "/asset-events", {"events": [event]})
            rule = {"groups": [{"groupId": "g", "members": [{"assetKey": asset}]}], "target": TARGET, "enabled": False}
            self.ok("PUT", f"/rules/{rule_id}", rule)
            self.triggers[rule_id] = self.ok("POST", f"/rules/{rule_id}/evaluate", {"force": True})["triggerKey"]

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str = ADMIN_TOKEN,
        query: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        answer = self.app.resolve(api_event(method, path, body, headers=headers, query=query), FakeLambdaContext())
        return int(answer["statusCode"]), json.loads(answer["body"]) if answer["body"] else None

    def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        status, answer = self.call(method, path, body, **kwargs)
        assert 200 <= status < 300, (method, path, status, answer)
        return answer

    def token(self, role: str, rules: list[str] | None = None, assets: list[str] | None = None) -> str:
        body = {"role": role, "rules": rules or [], "assets": assets or []}
        return str(self.ok("POST", "/tokens", body)["token"])

    def close(self) -> None:
        container.use(None)
