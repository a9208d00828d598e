"""Each bench imports and its smallest case runs, so a bench cannot rot unseen between ``make bench`` runs.

The benches themselves run under ``make bench`` only; here each runs with its knobs turned to the least
(one run, a couple of events), and its figures are checked for what they must be whatever the machine's
speed: request counts that the code makes, webhooks that arrived, a section that says how it was made.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import bench.dispatch
import bench.ingest
import bench.localstack
import bench.partitions
import bench.poll
import bench.poll_partitions
import bench.resolve
import bench.run
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # runs every benchmark once: the full gate only


@pytest.mark.parametrize("name", bench.run.BENCHES)
def test_every_bench_module_imports_and_has_a_run(name: str) -> None:
    module = importlib.import_module(f"bench.{name}")
    assert callable(module.run) and (module.__doc__ or "").strip()


def _rows(rows: list[dict[str, Any]], case: str) -> dict[str, Any]:
    (row,) = [r for r in rows if r["case"] == case]
    return row


def test_ingest_compares_the_handler_with_its_own_requests_replayed_bare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench.ingest, "RUNS", 1)
    monkeypatch.setattr(bench.ingest, "EVENTS", 2)
    rows = bench.ingest._handler_vs_bare()
    novel = _rows(rows, "novel: requests per one-event push")
    # the same requests, replayed: a novel event is one transaction of its record and its state (no read when warm)
    assert float(novel["handler"]) >= 1 and novel["handler"] == novel["bare boto3"]
    assert "TransactWriteItems" in novel["detail"]
    wall = _rows(rows, "novel: wall time per event")
    assert wall["handler"].endswith(" ms") and wall["handler / bare"]
    assert _rows(rows, "duplicate: share of the wall time inside moto")["handler"].endswith("%")


def test_dispatch_counts_the_requests_of_a_claim_and_its_webhook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench.dispatch, "CLAIMS", 1)
    new, again = bench.dispatch.run()
    assert new["webhook requests per claim"] == "1" and again["webhook requests per claim"] == "0"
    assert "s3 PutObject 1" in new["by operation"]  # the run manifest
    assert float(new["AWS requests per claim"]) >= 3


def test_poll_runs_the_use_case_and_the_worker_path(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("HISTORIES", (1,)), ("WORKER_HISTORY", 1), ("NEW_REPEATS", 1), ("UNCHANGED_REPEATS", 1)):
        monkeypatch.setattr(bench.poll, name, value)
    monkeypatch.setattr(bench.poll, "BATCH", 2)
    rows = bench.poll.run(("paimon",), ("paimon",))
    assert [(r["path"], r["case"], r["events"]) for r in rows] == [
        (path, case, events)
        for path in (bench.poll.Bench.path, bench.poll.WorkerBench.path)
        for case, events in (("unchanged", 0), ("1 new snapshot", 1), ("2 new snapshots", 2))
    ]
    use_case, worker = rows[0], rows[3]
    assert use_case["storage requests"] == worker["storage requests"]  # the same reads of the table
    assert worker["DynamoDB requests"] > use_case["DynamoDB requests"]  # plus the registration and the status


def test_poll_partitions_measures_one_snapshot_per_case_and_what_recording_partitions_adds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench.poll_partitions, "REPEATS", 1)
    monkeypatch.setattr(bench.poll_partitions, "WIDE", 2)
    rows = bench.poll_partitions.run(("paimon", "delta"))
    assert [(r["format"], r["case"], r["partitions"], r["events"]) for r in rows] == [
        (fmt, case, touched, 1)
        for fmt in ("paimon", "delta")
        for case, touched in (("unpartitioned", 0), ("1 partition", 1), ("2 partitions", 2))
    ]
    extra = {(r["format"], r["partitions"]): r["extra storage requests"] for r in rows}
    assert extra[("delta", 1)] == extra[("delta", 2)] == 0  # the commit file is read anyway
    assert extra[("paimon", 1)] == extra[("paimon", 2)] > 0  # its delta manifest list and manifest, however many


def test_resolve_states_the_share_inside_moto() -> None:
    row = bench.resolve._scenario(1, True)
    assert (row["Query"], row["TransactWriteItems"], row["claims"]) == (1, 1, "1")
    assert row["share inside moto"].endswith("%") and row["s inside moto"] >= 0


def test_partitions_counts_the_facts_claims_and_clears_of_a_commit_in_transactions() -> None:
    row = bench.partitions._scenario(3, 2)
    # the 3 facts in one transaction (shared by the rules); per rule, its 3 claims in one transaction and the 3 days
    # payments left pending cleared in one; no pending page
    assert (row["PutItem"], row["DeleteItem"], row["claims"], row["TransactWriteItems"], row["Query"]) == (
        0,
        0,
        6,
        1 + 2 + 2,
        1,
    )


def test_localstack_times_sequential_and_concurrent_pushes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("PUSHES", 1), ("FILL", 4), ("STOCK_FILL", 4)):
        monkeypatch.setattr(bench.localstack, name, value)
    run = bench.localstack._one_run(adapted=True)
    assert len(run["fresh"]) == 1 and len(run["fresh concurrent"]) == bench.localstack.PUSHERS
    assert len(run["filled concurrent"]) == bench.localstack.PUSHERS and all(t > 0 for t in run["filled concurrent"])
    costs = run["costs"]  # 4 novel events: each its record and its state update in one transaction, at moto's entry
    assert costs["requests"] >= 1 and costs["moto_ms"] > 0 and costs["stack_ms"] > 0
    assert "TransactWriteItems" in costs["top"]
    rows = bench.localstack._rows([run], "adapted", "load x")
    assert any(r["case"].startswith("the fill's cost") for r in rows)


def test_only_re_measures_the_named_bench_and_keeps_the_other_sections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.md"
    kept = "## ingest: Ingest: kept as written\n\nCommand: `x`.\n\n| case |\n|---|\n| a |\n"
    results.write_text(f"# Benchmark results\n\nold header\n\n{kept}\n## resolve: Resolve: old\n\nold figures\n")
    monkeypatch.setattr(bench.run, "RESULTS", results)
    monkeypatch.setattr(bench.resolve, "run", lambda: [{"rules": 1, "seconds": 0.5}])
    assert bench.run.main(["--only", "resolve"]) == 0
    text = results.read_text()
    assert kept in text and "old figures" not in text
    resolve = text.split("## resolve:", 1)[1]
    assert "--only resolve" in resolve and "load average (1 min)" in resolve and "| 1 | 0.5 |" in resolve


def test_the_mutation_section_is_written_alone_and_kept_by_a_full_bench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make mutation`` writes its section (bench.mutation) keeping the others; ``make bench``, which does not run
    it, keeps it as written."""
    results = tmp_path / "results.md"
    kept = "## ingest: Ingest: kept as written\n\nfigures\n"
    results.write_text(f"# Benchmark results\n\nold header\n\n{kept}")
    monkeypatch.setattr(bench.run, "RESULTS", results)
    bench.run.replace_section("mutation", "## mutation: Mutation: a score\n\n| module |\n|---|\n| all |\n")
    text = results.read_text()
    assert text.startswith("# Benchmark results\n\nold header\n\n## ingest:") and kept in text
    assert text.index("## ingest:") < text.index("## mutation: Mutation: a score")
    monkeypatch.setattr(bench.run, "BENCHES", ["resolve"])
    monkeypatch.setattr(bench.resolve, "run", lambda: [{"rules": 1, "seconds": 0.5}])
    assert bench.run.main([]) == 0
    assert "## mutation: Mutation: a score" in results.read_text() and "## ingest:" not in results.read_text()


def test_stack_start_times_every_start_and_the_first_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.stack_start

    monkeypatch.setattr(bench.stack_start, "STARTS", 2)
    monkeypatch.setattr(bench.stack_start, "IDLE_SECONDS", 0.5)
    row, idle = bench.stack_start.run()
    assert row["case"].startswith("local stack start, ") and row["case"].endswith(" functions ready")
    assert float(row["value"].removesuffix(" s")) > 0 and "over 1 starts" in row["spread"]
    assert idle["case"] == "an idle stack's process, CPU per second" and "over 2 stacks" in idle["spread"]


def test_imports_times_boto3_alone_and_the_handler_and_splits_out_lakehook() -> None:
    import bench.imports

    code = bench.imports._functions()["ResolverFunction"]
    alone, handler = bench.imports._sample(code, "boto3"), bench.imports._sample(code, "app")
    assert alone["own"] == {} and alone["cumulative_ms"] > 0  # boto3 alone runs no lakehook code
    assert {"app", "lakehook.container", "lakehook.settings"} <= set(handler["own"])  # each module timed
    assert not any(m.startswith(("lakehook.local", "lakehook.cli")) for m in handler["own"])
    assert 0 < handler["own_ms"] < handler["cumulative_ms"]  # the third-party imports are left out of own
    (row,) = bench.imports.measure({"ResolverFunction": code}, repeats=1)
    assert row["goal ≤ 0.5"] in ("met", "MISSED") and row["runs"] == 1
    assert row["lakehook modules"] == handler["lakehook_modules"] > 0
