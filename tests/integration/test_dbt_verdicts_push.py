"""``lakehook-client dbt-verdicts`` against the API behind a real HTTP server on 127.0.0.1: dbt's test results
become recorded quality verdicts of the producer's assets, a redelivery is DUPLICATE, an asset outside the
producer's prefixes is refused (exit 1)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakehook import container
from lakehook.client.cli import SECRET_ENV, main
from lakehook.domain.events import EventType
from tests.api_server import ApiServer, api_on_fakes, register_producer
from tests.support import ROOT

DBT = ROOT / "tests" / "data" / "dbt"
ORDERS = "iceberg://glue/dw_db/orders"
CUSTOMERS = "paimon://lake/dw_db/customers"


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with api_on_fakes("admin-token") as server:
        yield server


def run(api: ApiServer, asset_map: Path, *extra: str) -> tuple[int, list[dict[str, str]], str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["dbt-verdicts", str(DBT / "run_results.json"), "--manifest", str(DBT / "manifest.json"),
            "--asset-map", str(asset_map), "--url", api.base_url, "--producer-id", "dbt-tests", *extra]  # fmt: skip
    code = main(argv, out, err)
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_dbt_results_are_pushed_as_verdicts_pinned_to_the_given_snapshots(
    api: ApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, register_producer("dbt-tests", {"assetKeyPrefixes": ["iceberg://glue/dw_db/"]}))
    asset_map = tmp_path / "assets.json"
    asset_map.write_text(json.dumps({"model.shop.orders": ORDERS}))
    code, lines, err = run(api, asset_map, "--snapshot", f"{ORDERS}=7001:12")
    assert code == 0, err
    assert lines == [{"assetKey": ORDERS, "eventType": "QUALITY_CHECK_FAILED", "status": "ACCEPTED"}]
    [recorded] = container.current().asset_store.list_events(ORDERS, 10).items
    assert recorded.event.event_type is EventType.QUALITY_CHECK_FAILED and recorded.event.snapshot_id == 7001
    assert recorded.event.payload == {
        "dbt": {
            "model": "model.shop.orders",
            "tests": 2,
            "failedTests": ["unique_orders_order_id"],
            "invocationId": "5a6d1b4e-0f1c-4c43-9a36-6c1b1f5d9e21",
            "dbtVersion": "1.9.1",
            "generatedAt": "2026-12-07T08:12:31.504312Z",
        }
    }
    assert run(api, asset_map, "--snapshot", f"{ORDERS}=7001:12")[1][0]["status"] == "DUPLICATE"
    # an asset outside the producer's prefixes: the push is refused, exit 1 with the reason
    asset_map.write_text(json.dumps({"model.shop.customers": CUSTOMERS}))
    code, lines, err = run(api, asset_map, "--snapshot", f"{CUSTOMERS}=41")
    assert code == 1 and "may not write" in err, err
