"""The use cases that tell apart what a scheduled or bus function was handed (its handler only calls them, as
docs/architecture.md says): the poll planner's notice or tick (``PlanPollsFor``), the deferral sweep's minute or
freshness schedule (``SweepOnSchedule``), and what the bus function counts of a taken or a rejected event
(``report_bus_event``). Taken from the container on fakes (tests/wiring.py)."""

from __future__ import annotations

from typing import Any

from lakehook.domain.events import EventResult, IngestStatus
from lakehook.observability import MetricName
from lakehook.usecases.bus_ingest import BusReport, report_bus_event
from lakehook.usecases.plan_polls import WorkMode
from tests.unit.test_poll_planning import delta
from tests.wiring import in_memory

S3_COMMIT = {
    "source": "aws.s3",
    "detail-type": "Object Created",
    "detail": {"bucket": {"name": "lake"}, "object": {"key": "orders/_delta_log/00000000000000000003.json"}},
}


class Sink:
    def __init__(self) -> None:
        self.counted: list[tuple[str, float]] = []

    def add_metric(self, name: str, unit: str, value: float) -> Any:
        self.counted.append((name, value))


def test_a_commit_notice_queues_the_tables_it_names_and_counts_itself_polled_or_ignored() -> None:
    container = in_memory()
    container.asset_registry.put_asset(delta("orders"), 1)
    polled = container.plan_polls_for(S3_COMMIT)
    assert (polled.message, polled.counted) == ("commit notice", (MetricName.COMMIT_NOTICE_POLLED,))
    assert polled.answer == container.plan_notified_polls(S3_COMMIT).to_log()
    assert len(container.work_queue.messages) == 2  # the notice's poll, and the same notice again

    other = {**S3_COMMIT, "detail": {"bucket": {"name": "elsewhere"}, "object": {"key": "x/_delta_log/1.json"}}}
    ignored = container.plan_polls_for(other)
    assert ignored.counted == (MetricName.COMMIT_NOTICE_IGNORED,)


def test_a_tick_plans_by_its_mode_at_its_time_and_counts_nothing() -> None:
    container = in_memory()
    container.asset_registry.put_asset(delta("orders"), 1)
    tick = {"source": "aws.events", "detail-type": "Scheduled Event", "time": "2026-12-01T10:00:00Z"}
    done = container.plan_polls_for(tick)
    assert (done.message, done.counted) == ("polls planned", ())
    assert done.answer == {"mode": WorkMode.POLL.value, "assets": 1, "messages": 1}
    assert container.plan_polls_for({**tick, "mode": "compensate"}).answer["mode"] == WorkMode.COMPENSATE.value


def test_the_minutes_sweep_marks_due_deferrals_and_the_freshness_schedule_checks() -> None:
    container = in_memory()
    assert container.deferral_sweep({"source": "aws.events"}) == {"due": 0}
    checked = container.deferral_sweep({"check": "freshness"})
    assert checked == {
        "notAdvanced": 0,
        "rulesOverdue": [],
        "assetsOverdue": [],
        "rulesUnchecked": [],
        "waits": container.check_freshness().waits(),
    }


def test_a_rejected_bus_event_is_counted_invalid_and_foreign_and_a_taken_one_counts_its_events() -> None:
    sink = Sink()
    rejected = BusReport("e1", "writer", rejected="not a producer's account", account="1", unbound_account=True)
    assert report_bus_event(rejected, sink) == rejected.to_log()
    assert sink.counted == [(MetricName.EVENT_INVALID, 1), (MetricName.BUS_EVENT_FOREIGN_ACCOUNT, 1)]

    sink.counted.clear()
    taken = BusReport("e2", "writer", "p", results=[EventResult(eventId="a", status=IngestStatus.ACCEPTED)])
    assert report_bus_event(taken, sink) == taken.to_log()
    assert sink.counted == [(MetricName.EVENT_RECEIVED, 1), (MetricName.STATE_UPDATED, 1)]
