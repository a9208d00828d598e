"""The request counts of run confirmation and source health that bench/results.md's ``loop`` section prices, held.

Counted through the real code on a moto server (``bench.loop``): exact, so the same on any machine. A poll of an
outlet table whose new commit carries a started run's trigger key costs two reads (the claim, its rule) and two
conditional writes (the confirmation, the outlet state's confirmed snapshot) more than a poll of a plain commit, and
no storage request more. The freshness tick's NOT_ADVANCED pass is two queries (the rules, then each confirm rule's
claims of the lookback) plus one conditional write per run it marks, at most 100 a tick; with nothing due it is the
two queries alone. ``GET /assets/state`` answers the source's health in the reads it made anyway; explain of a
rule with a polled member reads the member's poll status in its batch of reads (and shows it when not HEALTHY).
"""

from __future__ import annotations

import json

import bench.loop
import pytest

pytestmark = pytest.mark.integration


def test_a_keyed_outlet_commit_costs_two_reads_and_two_writes_and_health_costs_no_request_of_its_own() -> None:
    found = bench.loop.outlet_and_health()

    assert bench.loop._difference(found["keyed"], found["plain"]) == {"dynamodb GetItem": 2, "dynamodb UpdateItem": 2}
    assert found["keyed"]["write_units"] - found["plain"]["write_units"] == 2
    assert found["state"]["requests"] == {"dynamodb GetItem": 4}
    assert found["state"]["write_units"] == 0
    assert found["state body"]["sourceHealth"]["state"] == "HEALTHY"
    assert found["explain"]["requests"] == {"dynamodb BatchGetItem": 4, "dynamodb GetItem": 3}
    assert found["explain"]["write_units"] == 0
    assert found["explain body"]["ruleId"] == "ads"  # a HEALTHY member's health is read and not shown
    assert "sourceHealth" not in json.dumps(found["explain body"])


def test_the_not_advanced_pass_is_two_queries_and_one_write_per_run_marked_at_most_100_a_tick() -> None:
    small = bench.loop.sweep(10)
    assert [(r["case"], r["requests"]) for r in small] == [
        ("all due (a tick marks 10)", "dynamodb Query 2, dynamodb UpdateItem 10"),
        ("none due (all marked)", "dynamodb Query 2"),
    ]
    assert small[1]["write units"] == 0

    over = bench.loop.sweep(101)
    assert [r["case"] for r in over] == ["all due (a tick marks 100)", "none due (all marked)"]
    assert over[0]["requests"].endswith("dynamodb UpdateItem 100")
