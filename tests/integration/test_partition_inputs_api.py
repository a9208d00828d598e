"""The inputs this session's partition features added, sent as a caller would: through the ingest API's handler.

A forced partition (``POST /rules/{id}/evaluate`` with ``partition``), a rollup range (``complete``), the partition
freshness promise (``partitionMaxAgeSeconds``) and a partition's coverage (``GET /assets/coverage?partitionKey=``):
generated values of every JSON type get a 4xx naming the field, or are accepted, never a 5xx (``Api.call`` fails on
one); a caller without credentials is refused before anything is read; a forced partition repeated under its
Idempotency-Key runs once.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_profiles import examples
from tests.integration.test_api import Api

ORDERS = "paimon://lake/ods_db/orders"
PAYMENTS = "paimon://lake/ods_db/payments"
SHOPS = "paimon://lake/ods_db/shops"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
partition_like = st.one_of(
    json_values,
    st.text(max_size=600),
    st.builds(lambda v: f"dt={v}", st.text(max_size=40)),
    st.builds(lambda a, b: f"{a}={b}", st.text(max_size=10), st.text(max_size=10)),
    st.sampled_from(["dt=2026-12-01", "dt=2026-12-01/dt=2026-12-02", "dt=", "=x", "dt=2026-12-01-10", "x" * 5000]),
)
SETTINGS = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def daily_rule(**extra: Any) -> dict[str, Any]:
    return {
        "groups": [
            {
                "groupId": "daily",
                "partitionBy": ["dt"],
                "members": [
                    {"assetKey": ORDERS, "partition": {}},
                    {"assetKey": PAYMENTS, "partition": {}},
                    {"assetKey": SHOPS},
                ],
            }
        ],
        "target": {"type": "eventbridge", "eventBusName": "default"},
        **extra,
    }


def put_daily(api: Api) -> None:
    answer = api.call("PUT", "/rules/daily_trade", daily_rule())
    assert answer.status in (200, 201), answer.body


@SETTINGS
@given(partition=partition_like, group=st.one_of(st.just("daily"), json_values))
def test_a_forced_partition_of_any_shape_is_answered_4xx_naming_its_field_or_run(
    api: Api, partition: Any, group: Any
) -> None:
    put_daily(api)
    answer = api.call("POST", "/rules/daily_trade/evaluate", {"force": True, "partition": partition, "groupId": group})
    if answer.status >= 400:
        assert 400 <= answer.status < 500
        assert answer.body.get("field") in ("partition", "groupId", "body", None), answer.body
        if answer.status == 400:
            assert answer.body["field"] in ("partition", "groupId", "body"), answer.body
    # nothing has committed: no member has a commit touching any partition, so nothing may have run
    assert api.call("GET", "/triggers", query={"ruleId": "daily_trade"}).body["items"] == []


def test_a_forced_partition_needs_credentials_before_anything_is_read(api: Api) -> None:
    put_daily(api)
    body = {"force": True, "partition": "dt=2026-12-01"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic eDp5"}):
        answer = api.call("POST", "/rules/daily_trade/evaluate", body, headers=headers, admin=False)
        assert answer.status in (401, 403), answer.body


def test_a_forced_partition_repeated_under_its_idempotency_key_runs_once(api: Api, producer: str) -> None:
    put_daily(api)
    commits = [
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": key, "snapshotId": 1, "partitions": ["dt=2026-12-01"]}
        for key in (ORDERS, PAYMENTS)
    ]
    shops = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": SHOPS, "snapshotId": 1}
    assert api.push({"events": [*commits, shops]}).status == 200
    body = {"force": True, "partition": "dt=2026-12-01"}
    headers = {"Idempotency-Key": "force-dt-2026-12-01"}
    first = api.call("POST", "/rules/daily_trade/evaluate", body, headers=headers)
    again = api.call("POST", "/rules/daily_trade/evaluate", body, headers=headers)
    assert first.status == again.status == 200, (first.body, again.body)
    assert first.body["triggerKey"] == again.body["triggerKey"]
    other = api.call("POST", "/rules/daily_trade/evaluate", {**body, "partition": "dt=2026-12-02"}, headers=headers)
    assert other.status == 409, other.body
    manual = [
        t
        for t in api.call("GET", "/triggers", query={"ruleId": "daily_trade"}).body["items"]
        if ".manual-" in t["triggerKey"]
    ]
    assert [t["triggerKey"] for t in manual] == [first.body["triggerKey"]]
    assert manual[0]["partition"] == "dt=2026-12-01"


@SETTINGS
@given(
    complete=st.one_of(
        json_values,
        st.booleans(),
        st.fixed_dictionaries({"from": st.integers(-2, 26), "to": st.integers(-2, 26)}),
    ),
    age=st.one_of(json_values, st.integers(-10, 40_000_000)),
)
def test_a_rollup_range_and_a_partition_freshness_of_any_shape_are_checked_when_the_rule_is_written(
    api: Api, complete: Any, age: Any
) -> None:
    rule = daily_rule(freshness={"partitionMaxAgeSeconds": age})
    rule["groups"][0]["partitionBy"] = ["dt"]
    rule["groups"][0]["members"][0]["partition"] = {"fields": {"dt": {"field": "ts_hour", "grain": "day"}}}
    rule["groups"][0]["members"][0]["partition"]["fields"]["dt"]["complete"] = complete
    answer = api.call("PUT", "/rules/ranged", rule)
    if answer.status >= 400:
        assert answer.status == 400, answer.body
        assert answer.body["field"].startswith(("groups.0.members.0.partition", "freshness")), answer.body
    else:
        stored = api.call("GET", "/rules/ranged").body
        assert json.dumps(stored)  # what was accepted reads back


@SETTINGS
@given(partition=st.one_of(st.text(max_size=700), st.sampled_from(["", "region=eu", "a" * 513])))
def test_a_partitions_coverage_of_any_key_is_answered_or_refused_by_a_4xx(api: Api, partition: str) -> None:
    query = {"assetKey": "s3://spool/orders", "start": "2025-06-01T00:00:00Z", "end": "2025-06-02T00:00:00Z"}
    answer = api.call("GET", "/assets/coverage", query={**query, "partitionKey": partition})
    if answer.status >= 400:
        assert answer.status in (400, 422), answer.body
    else:
        assert answer.body["covered"] is False
    refused = api.call("GET", "/assets/coverage", query={**query, "partitionKey": partition}, admin=False)
    assert refused.status in (401, 403)


def test_the_generated_rollups_and_ages_include_ones_a_rule_accepts(api: Api) -> None:
    rule = daily_rule(freshness={"partitionMaxAgeSeconds": 3600})
    rule["groups"][0]["members"][0]["partition"] = {
        "fields": {"dt": {"field": "ts_hour", "grain": "day", "complete": {"from": 6, "to": 22}}}
    }
    assert api.call("PUT", "/rules/ranged", rule).status in (200, 201)
    rule["freshness"] = {"partitionMaxAgeSeconds": 59}  # below its floor
    assert api.call("PUT", "/rules/ranged", rule).body["field"].startswith("freshness")
