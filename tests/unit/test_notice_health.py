"""Dropped commit notices in source health (domain.source_health.with_notices): a table whose notices stopped is
LAGGING (``laggingBy: NOTICES_STOPPED``) in GET /assets/state, explain and ``lakehook state``, from the safety-net
poll that found a commit no notice announced (one poll period), until a notice names it again. The join alone as a
property, then through the container on the in-memory fakes, polled as the poll worker polls."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.base import SourceHealthAnswer
from lakehook.domain.notice_state import NoticeHealth, NoticeState, PollCadence
from lakehook.domain.source_health import BlockedBy, Health, LaggingBy, SourceHealth, with_notices
from lakehook.usecases.plan_polls import RunPollWork, WorkMode
from tests.hypothesis_profiles import examples
from tests.unit.test_poll import KEY
from tests.unit.test_source_health_answers import Stack

CADENCE = PollCadence(default_interval_seconds=60, safety_net_seconds=3_600, quiet_after_seconds=86_400)
NOW = 10**12
HEALTHS = st.sampled_from(
    [
        SourceHealth(KEY, Health.HEALTHY),
        SourceHealth(KEY, Health.LAGGING, 5, "behind", lagging_by=LaggingBy.BEHIND_HEAD),
        SourceHealth(KEY, Health.BLOCKED, 5, "refused", BlockedBy.CREDENTIALS),
        SourceHealth(KEY, Health.GAP, 5, "expired"),
    ]
)
AGES = st.none() | st.integers(0, 3 * CADENCE.quiet_after_seconds * 1000)


@given(health=HEALTHS, notice_age=AGES, missed_age=AGES)
@settings(max_examples=examples(300), deadline=None)
def test_only_a_healthy_source_whose_notices_stopped_becomes_lagging(
    health: SourceHealth, notice_age: int | None, missed_age: int | None
) -> None:
    notices = NoticeState(
        None if notice_age is None else NOW - notice_age,
        None if missed_age is None or notice_age is None else NOW - min(missed_age, notice_age),
    )
    joined = with_notices(health, notices, NOW, CADENCE)
    quiet = notices.health(NOW, CADENCE) is NoticeHealth.QUIET
    if health.state is not Health.HEALTHY or not quiet:
        assert joined == health  # a worse state stands; notices that arrive (or never did) change nothing
        return
    assert joined is not None and (joined.state, joined.lagging_by) == (Health.LAGGING, LaggingBy.NOTICES_STOPPED)
    assert joined.since == notices.fast_since(NOW, CADENCE) and joined.trusted  # LAGGING: rules still decide
    why = "no notice had announced" if notices.missed_since_ms is not None else "for more than 86400 s"
    assert (
        why in (joined.reason or "") and SourceHealthAnswer.from_domain(joined).dump()["laggingBy"] == "NOTICES_STOPPED"
    )
    assert with_notices(None, notices, NOW, CADENCE) is None  # never polled: nothing is known


def test_a_dropped_notice_shows_in_explain_and_the_asset_state_within_one_poll_until_the_next_notice() -> None:
    stack = Stack()
    notices = stack.c.notice_store
    work = RunPollWork(stack.c.asset_registry, stack.poll, None, notices=notices, clock=stack.clock)
    stack.table.commit(1)
    notices.record_notice([KEY], stack.now)  # notices arrive: the table is polled as a safety net
    work(WorkMode.POLL, [KEY])
    member = next(m for m in stack.group()["members"] if m["assetKey"] == KEY)
    assert "sourceHealth" not in member
    assert stack.c.read_asset_state(KEY)["sourceHealth"]["state"] == "HEALTHY"

    stack.table.commit(1)  # a commit whose notice was dropped
    stack.now += 3_600_000
    summary = work(WorkMode.POLL, [KEY], safety_net=True)  # the next safety-net poll finds it
    assert summary["noticesMissed"] == [KEY]
    member = next(m for m in stack.group()["members"] if m["assetKey"] == KEY)
    shown = member["sourceHealth"]
    assert (shown["state"], shown["laggingBy"]) == ("LAGGING", "NOTICES_STOPPED")
    assert "its commit notices stopped" in shown["reason"]
    group = stack.group()
    assert not group["reason"].startswith("cannot decide")  # LAGGING is trusted: the resolver's reason stands
    answered = stack.c.read_asset_state(KEY)
    assert answered["sourceHealth"] == shown and answered["notices"]["state"] == "QUIET"

    notices.record_notice([KEY], stack.now)  # notices arrive again
    assert stack.c.read_asset_state(KEY)["sourceHealth"]["state"] == "HEALTHY"
    member = next(m for m in stack.group()["members"] if m["assetKey"] == KEY)
    assert "sourceHealth" not in member
