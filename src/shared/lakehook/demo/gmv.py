"""The RFC's GMV scenario (seed 000, section 5): five tables, three rules, three downstream jobs; plus a Delta
calendar dimension joined into the daily GMV, so one rule spans two table formats."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lakehook.demo.consumers import TARGET_SECRET, Layer, dashboard, gmv_daily, trade_events
from lakehook.demo.lake import (
    CALENDAR_SCHEMA,
    DAILY_SCHEMA,
    DASHBOARD_SCHEMA,
    EVENTS_SCHEMA,
    ORDERS_SCHEMA,
    PAYMENTS_SCHEMA,
    Lake,
)

ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"
DWD = "iceberg://glue/dw_db/dwd_trade_event_fact"
DWS = "iceberg://glue/dw_db/dws_gmv_daily"
ADS = "iceberg://glue/ads_db/ads_gmv_dashboard"
CALENDAR = "delta://lake/dim_db/dim_calendar"

TABLES = {
    ORDERS: ("paimon", "ods_db.ods_order_latest", ORDERS_SCHEMA),
    PAYMENTS: ("paimon", "ods_db.ods_payment_latest", PAYMENTS_SCHEMA),
    DWD: ("iceberg", "dw_db.dwd_trade_event_fact", EVENTS_SCHEMA),
    DWS: ("iceberg", "dw_db.dws_gmv_daily", DAILY_SCHEMA),
    ADS: ("iceberg", "ads_db.ads_gmv_dashboard", DASHBOARD_SCHEMA),
    CALENDAR: ("delta", "dim_db.dim_calendar", CALENDAR_SCHEMA),
}
# Polled as well as pushed: orders (how a lost push is recovered) and the dashboard (Glue), whose snapshots
# reach lakehook both as the ADS run's outlets and through the poller, as one event each. The Delta calendar
# is polled only: its writer knows nothing of lakehook.
POLLED = (ORDERS, ADS, CALENDAR)
CALENDAR_DAYS = {"2025-06-01": "2025-W22", "2025-06-02": "2025-W23", "2025-06-03": "2025-W23"}

DWD_RULE, DWS_RULE, ADS_RULE = "dwd_trade_event_fact", "dws_gmv_daily", "ads_gmv_dashboard"
RULES = (DWD_RULE, DWS_RULE, ADS_RULE)


def short(asset: str) -> str:
    return asset.rsplit("/", 1)[-1]


def table(asset: str) -> str:
    return TABLES[asset][1]


def _read(asset: str) -> tuple[str, str]:
    kind, name, _ = TABLES[asset]
    return kind, name


def layers() -> dict[str, Layer]:
    """The three jobs, keyed by the path segment of their webhook."""

    def dwd(lake: Lake, pins: dict[str, int]) -> pa.Table:
        return trade_events(
            lake.paimon_read(table(ORDERS), pins[ORDERS]), lake.paimon_read(table(PAYMENTS), pins[PAYMENTS])
        )

    def dws(lake: Lake, pins: dict[str, int]) -> pa.Table:
        return gmv_daily(lake.iceberg_read(table(DWD), pins[DWD]), lake.delta_read(table(CALENDAR), pins[CALENDAR]))

    def ads(lake: Lake, pins: dict[str, int]) -> pa.Table:
        return dashboard(lake.iceberg_read(table(DWS), pins[DWS]), pins[DWS])

    return {
        "dwd": Layer(DWD_RULE, DWD, table(DWD), dwd, {ORDERS: _read(ORDERS), PAYMENTS: _read(PAYMENTS)}),
        "dws": Layer(DWS_RULE, DWS, table(DWS), dws, {DWD: _read(DWD), CALENDAR: _read(CALENDAR)}),
        "ads": Layer(ADS_RULE, ADS, table(ADS), ads, {DWS: _read(DWS)}),
    }


def rules(hooks_url: str) -> dict[str, dict[str, Any]]:
    """The three rules of section 5.3, each pointing at its job's webhook."""

    def target(path: str) -> dict[str, Any]:
        return {"type": "webhook", "url": f"{hooks_url}/hooks/{path}", "secretRef": TARGET_SECRET}

    policy = {"mode": "ALL_UPDATED", "minIntervalSeconds": 0, "quietPeriodSeconds": 0}
    return {
        DWD_RULE: {
            "description": "DWD trade events once both ODS tables advanced (orders: quality checked)",
            "groups": [
                {
                    "groupId": "trade_event_group",
                    "members": [
                        {"assetKey": ORDERS, "condition": {"snapshotRequired": True, "qualityStatus": "PASSED"}},
                        {"assetKey": PAYMENTS, "condition": {"snapshotRequired": True}},
                    ],
                }
            ],
            "policy": policy,
            "target": target("dwd"),
            "outlets": [DWD],  # what the job may report with its completion token
        },
        DWS_RULE: {
            "description": "daily GMV once the trade events advanced, joined with the Delta calendar",
            "groups": [
                {
                    "groupId": "gmv_group",
                    "members": [
                        {"assetKey": DWD, "condition": {"snapshotRequired": True}},
                        {"assetKey": CALENDAR, "condition": {"snapshotRequired": True}},
                    ],
                }
            ],
            # A slowly changing dimension: new trade events alone re-run the day (ANY_UPDATED), at the
            # calendar's newest version.
            "policy": {**policy, "mode": "ANY_UPDATED"},
            "target": target("dws"),
            "outlets": [DWS],
        },
        ADS_RULE: {
            "description": "the GMV dashboard once the daily GMV advanced",
            "groups": [
                {"groupId": "dashboard_group", "members": [{"assetKey": DWS, "condition": {"snapshotRequired": True}}]}
            ],
            "policy": policy,
            "target": target("ads"),
            "outlets": [ADS],
        },
    }
