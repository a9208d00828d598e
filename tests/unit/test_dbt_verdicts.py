"""dbt's run_results.json (schema v6, with its manifest.json) as one quality verdict per tested model: passed when
every test of it passed (or warned), failed naming the failed tests; unmapped models reported, never guessed."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.client.cli import main
from lakehook.client.dbt import DbtResultsError, dbt_verdicts, model_tests, relation_of
from lakehook.domain.events import AssetEvent
from tests.hypothesis_profiles import examples
from tests.support import ROOT

DBT = ROOT / "tests" / "data" / "dbt"
RUN_RESULTS = json.loads((DBT / "run_results.json").read_text())
MANIFEST = json.loads((DBT / "manifest.json").read_text())
SCHEMAS = "https://schemas.getdbt.com/dbt"
ORDERS = "iceberg://glue/dw_db/orders"
CUSTOMERS = "paimon://lake/dw_db/customers"
ASSETS: dict[str, Any] = {
    "model.shop.orders": {"assetKey": ORDERS, "snapshotId": 7001, "sequenceNumber": 12},  # by unique_id, pinned
    "awsdatacatalog.dw_db.customers": CUSTOMERS,  # by relation; its snapshot given apart
}


def test_each_tested_model_is_one_verdict_failed_naming_its_failed_tests() -> None:
    found = dbt_verdicts(RUN_RESULTS, MANIFEST, ASSETS, snapshots={CUSTOMERS: {"snapshotId": 41}})
    by_key = {e["assetKey"]: e for e in found.events}
    orders, customers = by_key[ORDERS], by_key[CUSTOMERS]
    assert orders["eventType"] == "QUALITY_CHECK_FAILED"
    assert (orders["snapshotId"], orders["sequenceNumber"]) == (7001, 12)
    assert orders["payload"]["dbt"]["failedTests"] == ["unique_orders_order_id"]
    assert orders["payload"]["dbt"]["tests"] == 2
    assert orders["payload"]["dbt"]["invocationId"] == "5a6d1b4e-0f1c-4c43-9a36-6c1b1f5d9e21"
    # a warn-severity test does not fail the model (nor does it fail dbt build); it is named
    assert customers["eventType"] == "QUALITY_CHECK_PASSED" and customers["snapshotId"] == 41
    assert customers["payload"]["dbt"]["warnedTests"] == ["accepted_values_customers_tier__gold__silver"]
    assert found.unmapped == ["model.shop.events"]
    for event in found.events:  # what the server takes: each verdict validates as a pushed event
        AssetEvent.model_validate(event)


def test_a_test_without_attached_node_counts_for_the_models_it_depends_on() -> None:
    tested = model_tests(RUN_RESULTS, MANIFEST)
    assert set(tested["model.shop.customers"].tests) == {
        "accepted_values_customers_tier__gold__silver",
        "not_null_customers_customer_id",
    }
    assert relation_of(MANIFEST["nodes"]["model.shop.orders"]) == "awsdatacatalog.dw_db.orders"


def test_a_sources_tests_judge_the_raw_table_it_names() -> None:
    manifest = copy.deepcopy(MANIFEST)
    manifest["sources"] = {
        "source.shop.ods.raw_orders": {
            "unique_id": "source.shop.ods.raw_orders", "name": "raw_orders", "resource_type": "source",
            "database": "awsdatacatalog", "schema": "ods_db", "identifier": "raw_orders",
            "relation_name": '"awsdatacatalog"."ods_db"."raw_orders"',
        }
    }  # fmt: skip
    manifest["nodes"]["test.shop.source_not_null_ods_raw_orders_id.77aa"] = {
        "name": "source_not_null_ods_raw_orders_id",
        "attached_node": None,
        "depends_on": {"macros": [], "nodes": ["source.shop.ods.raw_orders"]},
    }
    run_results = copy.deepcopy(RUN_RESULTS)
    run_results["results"].append({"unique_id": "test.shop.source_not_null_ods_raw_orders_id.77aa", "status": "fail"})
    raw = "iceberg://glue/ods_db/raw_orders"
    found = dbt_verdicts(
        run_results,
        manifest,
        {"awsdatacatalog.ods_db.raw_orders": {"assetKey": raw, "snapshotId": 5, "sequenceNumber": 5}},
    )
    [verdict] = [e for e in found.events if e["assetKey"] == raw]
    assert verdict["eventType"] == "QUALITY_CHECK_FAILED"
    assert verdict["payload"]["dbt"]["failedTests"] == ["source_not_null_ods_raw_orders_id"]


def test_the_snapshot_comes_from_the_map_the_given_pins_or_the_table_and_is_never_guessed() -> None:
    read: list[str] = []

    def from_table(key: str) -> dict[str, Any]:
        read.append(key)
        return {"eventType": "SNAPSHOT_COMMITTED", "assetKey": key, "snapshotId": 99, "commitTime": 1}

    found = dbt_verdicts(RUN_RESULTS, MANIFEST, ASSETS, snapshot_of=from_table)
    assert read == [CUSTOMERS] and {e["snapshotId"] for e in found.events} == {7001, 99}
    with pytest.raises(DbtResultsError, match=f"no snapshot for {CUSTOMERS}"):
        dbt_verdicts(RUN_RESULTS, MANIFEST, ASSETS)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (
            lambda r, m: r["metadata"].update(dbt_schema_version="https://schemas.getdbt.com/dbt/manifest/v12.json"),
            "v4, v5, v6",
        ),
        (
            lambda r, m: r["metadata"].update(dbt_schema_version="https://schemas.getdbt.com/dbt/run-results/v3.json"),
            "v3",
        ),
        (lambda r, m: r["results"][1].update(status="exploded"), "results[1].status"),
        (lambda r, m: m.pop("nodes"), "no nodes object"),
        (lambda r, m: m["nodes"].pop("test.shop.unique_orders_order_id.8b3c4d2e9f"), "is not in manifest.json"),
    ],
)
def test_files_that_are_not_dbts_are_refused_naming_what_is_wrong(change: Any, named: str) -> None:
    run_results, manifest = copy.deepcopy(RUN_RESULTS), copy.deepcopy(MANIFEST)
    change(run_results, manifest)
    with pytest.raises(DbtResultsError, match=named.replace("[", r"\[").replace("]", r"\]")):
        dbt_verdicts(run_results, manifest, ASSETS, snapshots={CUSTOMERS: {"snapshotId": 41}})


statuses = st.sampled_from(["pass", "warn", "fail", "error", "skipped"])


@settings(max_examples=examples(300), deadline=None)
@given(outcomes=st.lists(st.tuples(st.sampled_from(["orders", "customers"]), statuses), min_size=1, max_size=12))
def test_a_model_passes_exactly_when_none_of_its_tests_failed_errored_or_was_skipped(
    outcomes: list[tuple[str, str]],
) -> None:
    nodes = {k: v for k, v in MANIFEST["nodes"].items() if k.startswith("model.")}
    results = []
    for index, (model, status) in enumerate(outcomes):
        test_id = f"test.shop.t{index}_{model}.abc"
        nodes[test_id] = {"name": f"t{index}_{model}", "attached_node": f"model.shop.{model}"}
        results.append({"unique_id": test_id, "status": status})
    run_results = {"metadata": RUN_RESULTS["metadata"], "results": results}
    found = dbt_verdicts(run_results, {"nodes": nodes}, ASSETS, snapshots={CUSTOMERS: {"snapshotId": 41}})
    for event in found.events:
        model = "orders" if event["assetKey"] == ORDERS else "customers"
        mine = [s for m, s in outcomes if m == model]
        assert (event["eventType"] == "QUALITY_CHECK_PASSED") == all(s in ("pass", "warn") for s in mine)
        bad = event["payload"]["dbt"].get("failedTests", []) + event["payload"]["dbt"].get("erroredTests", [])
        assert len(bad) == sum(s in ("fail", "error") for s in mine)
    assert {e["assetKey"] for e in found.events} == {ORDERS if m == "orders" else CUSTOMERS for m, _ in outcomes}


def test_the_cli_dry_run_prints_the_verdicts_and_names_what_it_cannot_map(tmp_path: Path) -> None:
    assets = tmp_path / "assets.json"
    assets.write_text(json.dumps(ASSETS))
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "dbt-verdicts", str(DBT / "run_results.json"), "--manifest", str(DBT / "manifest.json"),
        "--asset-map", str(assets), "--snapshot", f"{CUSTOMERS}=41", "--dry-run",
    ]  # fmt: skip
    assert main(argv, out, err) == 0
    printed = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(e["assetKey"], e["eventType"]) for e in printed] == [
        (CUSTOMERS, "QUALITY_CHECK_PASSED"),
        (ORDERS, "QUALITY_CHECK_FAILED"),
    ]
    assert "model.shop.events is tested but not in the asset map" in err.getvalue()
    # bad input: a clear message and exit 2, nothing printed
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv[:-3], "--snapshot", f"{CUSTOMERS}=latest", "--dry-run"], out, err) == 2
    assert "is not ASSET_KEY=SNAPSHOT_ID[:SEQUENCE_NUMBER]" in err.getvalue() and out.getvalue() == ""
    err = io.StringIO()
    assert main(argv[:-1], io.StringIO(), err) == 2  # pushing without a URL, producer and secret
    assert "pushing needs --url" in err.getvalue()
