"""The demo's waits follow progress, not a fixed time: on a fake clock and a fake progress source."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from lakehook.demo.api import Api
from lakehook.demo.consumers import Run
from lakehook.demo.pending import chain_pending, looked_at
from lakehook.demo.view import Board
from lakehook.demo.waiting import Clock, GaveUp, recheck, wait_on_progress


@dataclass
class FakeTime:
    """A clock that moves only when the wait sleeps."""

    t: float = 0.0

    def sleep(self, seconds: float) -> None:
        self.t += seconds

    def clock(self) -> Clock:
        return Clock(now=lambda: self.t, sleep=self.sleep)


def world(changes: list[float], done_at: float) -> tuple[FakeTime, object, object]:
    """Something that advances at each of ``changes`` (seconds) and is done at ``done_at``."""
    time = FakeTime()

    def progress() -> int:
        return sum(1 for c in changes if c <= time.t)

    def check() -> bool:
        return time.t >= done_at

    return time, check, progress


def test_a_wait_keeps_going_long_past_its_patience_while_something_advances() -> None:
    changes = [100.0 * i for i in range(1, 11)]  # a step every 100 s: a busy machine, 1000 s in all
    time, check, progress = world(changes, done_at=1050.0)
    waited = wait_on_progress(check, progress, lambda: ["never asked"], patience=180, every=1, clock=time.clock())
    assert waited.done
    assert waited.seconds == 1050.0
    assert waited.describe() == []


def test_a_wait_with_no_progress_gives_up_after_its_patience_and_says_what_is_pending() -> None:
    time, check, progress = world([30.0, 60.0], done_at=10_000.0)  # moves twice, then stalls
    pending = ["run of dws_gmv_daily for trigger 1caa6e802bae: started, its completion not reported yet"]
    waited = wait_on_progress(check, progress, lambda: pending, patience=180, every=1, clock=time.clock())
    assert not waited.done
    assert (waited.seconds, waited.idle) == (240.0, 180.0)  # the last move at 60 s, then 180 s of nothing
    assert waited.describe() == [
        "gave up after 180 s with no progress (240 s in all); still pending:",
        "- run of dws_gmv_daily for trigger 1caa6e802bae: started, its completion not reported yet",
    ]


@given(
    gaps=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=12),
    patience=st.integers(min_value=1, max_value=300),
)
def test_a_wait_gives_up_exactly_when_some_stretch_without_progress_exceeds_its_patience(
    gaps: list[int], patience: int
) -> None:
    moments = [float(sum(gaps[: i + 1])) for i in range(len(gaps))]  # each gap ends in a change; the last: done
    time, check, progress = world(moments[:-1], done_at=moments[-1])
    waited = wait_on_progress(check, progress, list, patience=patience, every=1, clock=time.clock())
    assert waited.done == all(g <= patience for g in gaps)
    assert waited.seconds <= moments[-1]


def test_at_the_end_a_wait_that_gave_up_is_checked_again_and_says_whether_it_finished_afterwards() -> None:
    time = FakeTime()
    gave_up = wait_on_progress(lambda: time.t >= 500, int, lambda: ["a"], patience=100, every=1, clock=time.clock())
    stuck = wait_on_progress(lambda: False, int, lambda: ["b"], patience=100, every=1, clock=time.clock())
    time.t = 600.0
    lines = recheck(
        [
            GaveUp("three runs completed", lambda: time.t >= 500, lambda: ["run of ads"], gave_up),
            GaveUp("orders: latestSnapshotId 3", lambda: False, lambda: ["orders: latestSnapshotId is 2"], stuck),
        ],
        time.clock(),
    )
    assert lines == [
        "'three runs completed': finished afterwards (done when checked again, 500 s after giving up)",
        "'orders: latestSnapshotId 3': still not done 400 s after giving up; pending:",
        "  - orders: latestSnapshotId is 2",
    ]
    assert stuck.describe()[1:] == ["- b"]
    detailed = wait_on_progress(
        lambda: False, int, lambda: ["rule ads: 0 of 1 runs SUCCEEDED", "  no trigger yet: WAITING_FOR_UPDATE"],
        patience=1, every=1, clock=time.clock(),
    )  # fmt: skip
    assert detailed.describe()[1:] == ["- rule ads: 0 of 1 runs SUCCEEDED", "    no trigger yet: WAITING_FOR_UPDATE"]


def test_what_a_chain_wait_names_as_pending_runs_rules_and_assets() -> None:
    board = Board(
        rules=[
            ("dwd", "WAITING_FOR_UPDATE", "orders: snapshot 1 already triggered"),
            ("dws", "READY", ""),
            ("ads", "WAITING_FOR_UPDATE", "dws_gmv_daily: no snapshot yet"),
        ],
        triggers=[
            ("dwd", "ff0a69730ad1", "SUCCEEDED (attempts 1)", "orders@1"),
            ("dws", "1caa6e802bae", "DISPATCHING (attempts 2)", "dwd@7, dim_calendar@0"),
        ],
    )
    runs = [
        Run("t.ff0a69730ad1", "dwd", {}, {}, completed=True),
        Run("t.1caa6e802bae", "dws", {}, {}),
    ]
    assert chain_pending(board, runs, per_rule=1) == [
        "run of dws for trigger 1caa6e802bae: started, its completion not reported yet",
        "rule dws: 0 of 1 runs SUCCEEDED",
        "  trigger 1caa6e802bae: DISPATCHING (attempts 2) (dwd@7, dim_calendar@0)",
        "rule ads: 0 of 1 runs SUCCEEDED",
        "  no trigger yet: WAITING_FOR_UPDATE, dws_gmv_daily: no snapshot yet",
    ]
    before = looked_at(board, runs)
    runs[1].completed = True
    assert looked_at(board, runs) != before  # a run reporting completion is progress


def test_a_failed_check_prints_its_detail_as_whole_readable_lines_never_a_cut_dict() -> None:
    said: list[str] = []
    api = Api("http://127.0.0.1:1", "admin", say=said.append)
    long_reason = "the webhook answered 503 " * 30
    api.expect("a check", False, {"status": "FAILED", "reason": long_reason, "inputs": [{"snapshotId": 1}]})
    api.expect("a second check", False, ["first line", {"attempts": 2}])
    assert said == [
        "  FAIL a check",
        "         status: FAILED",
        f"         reason: {long_reason}",
        '         inputs: [{"snapshotId": 1}]',
        "  FAIL a second check",
        "         first line",
        '         {"attempts": 2}',
    ]
    api.session.close()
