"""The requests the cost notes price are the ones the handlers make: counted again on moto, each step's requests
by operation and its DynamoDB units equal bench/cost_measured.json's (which `python -m bench.cost` wrote and
docs/deploy.md's generated sections render). A change to what a handler asks of AWS fails here until the
figures are measured again, so the priced page cannot describe requests the code no longer makes."""

from __future__ import annotations

from typing import Any

import pytest
from bench import cost
from bench.cost_counts import DynamoDBUnits, Meter, event_path, polls
from bench.timed_moto import fresh_lakehook, quiet_stdout

pytestmark = pytest.mark.integration

COUNTED = ("requests", "read_units", "write_units")


def _counts(step: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if step is None else {k: step[k] for k in COUNTED}


def _metered(work: Any) -> dict[str, Any]:
    with fresh_lakehook() as (server, wired), quiet_stdout():
        units = DynamoDBUnits()
        units.install(server)
        return work(Meter(server, units), wired)  # type: ignore[no-any-return]


def test_each_event_and_run_step_makes_the_requests_the_notes_price() -> None:
    counted = _metered(lambda meter, wired: event_path(meter, wired, repeats=2))
    stored = cost.stored()["event path"]["steps"]
    assert {k: _counts(v) for k, v in counted["steps"].items()} == {k: _counts(v) for k, v in stored.items()}


@pytest.mark.slow
def test_each_format_s_unchanged_and_changed_poll_makes_the_requests_the_notes_price(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import bench.cost_counts

    monkeypatch.setattr(bench.cost_counts, "REPEATS", 1)
    counted = _metered(polls)
    stored = cost.stored()["polls"]
    assert {fmt: {case: _counts(m) for case, m in cases.items()} for fmt, cases in counted.items()} == {
        fmt: {case: _counts(m) for case, m in cases.items()} for fmt, cases in stored.items()
    }
