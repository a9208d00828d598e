"""The demo's pure parts: the layers' transformations and the stdout filter (the whole demo runs in e2e)."""

from __future__ import annotations

import io

import pyarrow as pa

from lakehook.demo.consumers import dashboard, gmv_daily, total_gmv_cents, trade_events
from lakehook.demo.lake import CALENDAR_SCHEMA, ORDERS_SCHEMA, PAYMENTS_SCHEMA
from lakehook.demo.quiet import WithoutMetricLines


def test_the_layers_turn_paid_orders_into_daily_gmv_and_a_dashboard() -> None:
    orders = pa.Table.from_pylist(
        [
            {"order_id": 1, "order_date": "2025-06-01", "amount_cents": 1000},
            {"order_id": 2, "order_date": "2025-06-01", "amount_cents": 2000},
            {"order_id": 3, "order_date": "2025-06-02", "amount_cents": 3000},
        ],
        schema=ORDERS_SCHEMA,
    )
    payments = pa.Table.from_pylist(
        [{"order_id": 1, "paid_cents": 1000}, {"order_id": 3, "paid_cents": 2500}], schema=PAYMENTS_SCHEMA
    )
    events = trade_events(orders, payments)
    assert events.column("order_id").to_pylist() == [1, 3]  # order 2 has no payment yet
    calendar = pa.Table.from_pylist([{"order_date": "2025-06-01", "week": "2025-W22"}], schema=CALENDAR_SCHEMA)
    daily = gmv_daily(events, calendar)
    assert daily.to_pylist() == [
        {"order_date": "2025-06-01", "week": "2025-W22", "gmv_cents": 1000, "orders": 1},
        {"order_date": "2025-06-02", "week": None, "gmv_cents": 2500, "orders": 1},  # a day the calendar lacks
    ]
    assert total_gmv_cents(daily) == 3500
    board = dashboard(daily, source_snapshot=42).to_pylist()
    assert [(r["gmv"], r["source_snapshot"]) for r in board] == [("10.00", 42), ("25.00", 42)]


def test_metric_lines_are_dropped_and_everything_else_passes() -> None:
    out = io.StringIO()
    quiet = WithoutMetricLines(out)
    print('{"_aws":{"Timestamp":1},"x":1}', file=quiet)
    print("  ok   a story line", file=quiet)
    print("", file=quiet)
    assert out.getvalue() == "  ok   a story line\n\n"
