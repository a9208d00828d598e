"""A freshness promise over partition runs (``freshness.partitionMaxAgeSeconds``, and ``maxWaitSeconds`` and
``expectedBy``, which a partitioned group keeps per partition): a partition a data commit touched runs within so long
of being found pending, or by the first deadline after its period ends; explain and the freshness check say which
partition is overdue."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.answers.freshness import OverdueAnswer
from lakehook.domain.errors import ValidationError
from lakehook.domain.freshness import OverdueKind, partition_deadline, partition_overdue
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.schedules import GroupSchedule
from lakehook.domain.time import ms_to_iso
from lakehook.usecases.freshness import CheckFreshness
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.rules import parse_rule
from tests.fakes.memory import InMemoryAssetRegistry
from tests.unit.test_partition_resolve import DIM, ORDERS, PAYMENTS, Lake, daily

HOUR = 3600


def promising(**freshness: Any) -> dict[str, Any]:
    return {**json_form(daily()), "freshness": freshness}


def test_a_partitioned_rule_promises_partition_max_age_and_round_trips() -> None:
    rule = parse_rule("daily", promising(partitionMaxAgeSeconds=HOUR))
    assert rule.freshness is not None and rule.freshness.partition_max_age_seconds == HOUR
    assert Rule.model_validate(json_form(rule)) == rule


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (promising(maxWaitSeconds=59), "freshness.maxWaitSeconds", "greater than or equal to 60"),
        (promising(expectedBy={"cron": "0 0 30 2 *"}), "freshness.expectedBy.cron", "never fires"),
        (promising(partitionMaxAgeSeconds=59), "freshness.partitionMaxAgeSeconds", "greater than or equal to 60"),
        (
            {
                "target": {"type": "eventbridge", "eventBusName": "runs"},
                "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}]}],
                "freshness": {"partitionMaxAgeSeconds": HOUR},
            },
            "freshness",
            "a rule with a partitioned group",
        ),
    ],
)
def test_a_promise_that_does_not_fit_the_rule_is_a_400_naming_freshness(
    data: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rule("daily", data)
    assert caught.value.field == field and words in str(caught.value)


@given(
    since=st.dictionaries(st.sampled_from([f"dt=2026-12-{d:02d}" for d in range(1, 10)]), st.integers(0, 10**7)),
    age=st.integers(60, 10_000),
    now=st.integers(0, 2 * 10**7),
)
def test_a_group_is_overdue_exactly_when_its_oldest_pending_partition_waited_past_the_promise(
    since: dict[str, int], age: int, now: int
) -> None:
    found = partition_overdue("g", age, since, now)
    late = sorted((t, p) for p, t in since.items() if t + age * 1000 <= now)
    assert (found is None) == (not late)
    if found is not None:
        oldest, key = late[0]
        assert (found.kind, found.since, found.partition, found.group_id) == (
            OverdueKind.PARTITION_MAX_AGE,
            oldest + age * 1000,
            key,
            "g",
        )
        assert OverdueAnswer.from_domain(found).dump()["partition"] == key and ms_to_iso(oldest) in found.reason
        assert ("more of the group's pending partitions" in found.reason) == (len(late) > 1)
    assert partition_overdue("g", None, since, now) is None


def test_a_pending_partition_is_overdue_once_it_waited_past_the_promise_and_on_time_once_it_ran() -> None:
    rule = parse_rule("daily", promising(partitionMaxAgeSeconds=HOUR))
    lake = Lake(rule)
    explainer = ExplainRule(
        lake.rules,
        lake.triggers,
        lake.reader,
        clock=lambda: lake.now,
        resolver=lake.resolve,
        partitions=lake.partitions,
    )

    def check() -> Any:
        return CheckFreshness(
            lake.rules,
            lake.triggers,
            InMemoryAssetRegistry(),
            lake.reader,
            lambda: lake.now,
            partitions=lake.partitions,
        )()

    found_at = lake.now
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.deliver()  # the day is pending: payments has not touched it
    lake.now = found_at + HOUR * 1000 - 1
    assert explainer.explain("daily")["freshness"] == {"status": "ON_TIME", "overdue": []}
    assert check().rules == {}
    lake.now = found_at + HOUR * 1000
    [overdue] = explainer.explain("daily")["freshness"]["overdue"]
    assert (overdue["kind"], overdue["partition"], overdue["groupId"]) == ("PARTITION_MAX_AGE", "dt=2026-12-01", "g")
    assert overdue["since"] == ms_to_iso(found_at + HOUR * 1000)
    assert [o.partition for o in check().rules["daily"]] == ["dt=2026-12-01"]
    lake.commit(PAYMENTS, 7, "2026-12-01")
    lake.deliver()
    assert lake.runs() == [("dt=2026-12-01", [(ORDERS, 1), (PAYMENTS, 7)])]
    lake.now += 10 * HOUR * 1000
    assert explainer.explain("daily")["freshness"]["status"] == "ON_TIME"
    assert check().rules == {}


def watching(lake: Lake) -> tuple[ExplainRule, Callable[[], Any]]:
    """Explain (its freshness answer) and the freshness check of the deferral sweep, on the lake's stores."""
    explainer = ExplainRule(
        lake.rules,
        lake.triggers,
        lake.reader,
        clock=lambda: lake.now,
        resolver=lake.resolve,
        partitions=lake.partitions,
    )

    def check() -> Any:
        registry = InMemoryAssetRegistry()
        return CheckFreshness(
            lake.rules, lake.triggers, registry, lake.reader, lambda: lake.now, partitions=lake.partitions
        )()

    return explainer, check


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def test_max_wait_seconds_is_kept_per_partition_on_a_partitioned_rule() -> None:
    """maxWaitSeconds on a partitioned rule is the per-partition promise: a pending partition that has not run within
    it of being found pending is overdue (MAX_WAIT, naming it); a rule of partitioned groups only is never overdue for
    want of group runs (it has none)."""
    rule = parse_rule("daily", promising(maxWaitSeconds=HOUR))
    assert rule.freshness is not None and rule.freshness.max_wait_seconds == HOUR
    lake = Lake(rule)
    explainer, check = watching(lake)
    lake.now += 10 * HOUR * 1000  # long past the rule's creation: nothing is pending, nothing overdue
    assert explainer.explain("daily")["freshness"] == {"status": "ON_TIME", "overdue": []}
    found_at = lake.now
    lake.commit(ORDERS, 1, "2026-12-01", "2026-12-02")
    lake.deliver()
    lake.now = found_at + HOUR * 1000 - 1
    assert check().rules == {}
    lake.now = found_at + HOUR * 1000
    [overdue] = explainer.explain("daily")["freshness"]["overdue"]
    assert (overdue["kind"], overdue["partition"], overdue["groupId"]) == ("MAX_WAIT", "dt=2026-12-01", "g")
    assert "maxWaitSeconds, per partition" in overdue["reason"] and "1 more of the group's pending" in overdue["reason"]
    assert [(o.kind, o.partition) for o in check().rules["daily"]] == [(OverdueKind.MAX_WAIT, "dt=2026-12-01")]
    lake.commit(PAYMENTS, 7, "2026-12-01", "2026-12-02")
    lake.deliver()
    assert len(lake.runs()) == 2
    assert explainer.explain("daily")["freshness"]["status"] == "ON_TIME" and check().rules == {}


@pytest.mark.parametrize(
    ("zone", "deadline"),
    [(None, "2026-12-07T06:00:00+00:00"), ("Europe/Berlin", "2026-12-07T05:00:00+00:00")],
)
def test_expected_by_expects_a_pending_day_by_the_first_deadline_after_it_ends(zone: str | None, deadline: str) -> None:
    """dt=2026-12-06 with expectedBy 06:00 is expected by 2026-12-07T06:00 (in Berlin: the day ends at 23:00 UTC, its
    deadline is 06:00 Berlin, 05:00 UTC); overdue (EXPECTED_BY, naming the day) from then until it runs."""
    data = promising(expectedBy={"cron": "0 6 * * *", "timezone": zone or "UTC"})
    if zone is not None:
        data["groups"][0]["partitionTimezone"] = zone
    lake = Lake(parse_rule("daily", data))
    explainer, check = watching(lake)
    lake.now = at("2026-12-06T10:00:00+00:00")
    lake.commit(ORDERS, 1, "2026-12-06")
    lake.deliver()
    lake.now = at(deadline) - 1
    assert explainer.explain("daily")["freshness"]["status"] == "ON_TIME" and check().rules == {}
    lake.now = at(deadline)
    [overdue] = explainer.explain("daily")["freshness"]["overdue"]
    assert (overdue["kind"], overdue["partition"], overdue["since"]) == (
        "EXPECTED_BY",
        "dt=2026-12-06",
        ms_to_iso(at(deadline)),
    )
    assert f"was expected to run by {ms_to_iso(at(deadline))}" in overdue["reason"]
    assert [(o.kind, o.partition) for o in check().rules["daily"]] == [(OverdueKind.EXPECTED_BY, "dt=2026-12-06")]
    lake.commit(PAYMENTS, 7, "2026-12-06")
    lake.deliver()
    assert lake.runs() == [("dt=2026-12-06", [(ORDERS, 1), (PAYMENTS, 7)])]
    assert explainer.explain("daily")["freshness"]["status"] == "ON_TIME" and check().rules == {}


def test_expected_by_gives_a_day_touched_after_its_deadline_until_the_next_one() -> None:
    """Late data for an old day (or a rule written after it) is expected by the next deadline, not overdue at once;
    a partition with no time value has no deadline."""
    data = promising(expectedBy={"cron": "0 6 * * *"})
    lake = Lake(parse_rule("daily", data))
    explainer, _ = watching(lake)
    lake.now = at("2026-12-06T10:00:00+00:00")
    lake.commit(ORDERS, 1, "2026-12-01", "not-a-day")
    lake.deliver()
    lake.now = at("2026-12-07T05:59:00+00:00")
    assert explainer.explain("daily")["freshness"]["status"] == "ON_TIME"
    lake.now = at("2026-12-07T06:00:00+00:00")
    [overdue] = explainer.explain("daily")["freshness"]["overdue"]
    assert overdue["partition"] == "dt=2026-12-01"  # dt=not-a-day names no period: no deadline
    lake.now = at("2026-12-20T06:00:00+00:00")
    assert [o["partition"] for o in explainer.explain("daily")["freshness"]["overdue"]] == ["dt=2026-12-01"]


@given(
    cron=st.sampled_from(["0 6 * * *", "30 7 * * 1-5", "0 * * * *", "15 2 1 * *"]),
    span_end=st.integers(at("2026-01-01T00:00:00+00:00"), at("2027-01-01T00:00:00+00:00")),
    pending=st.integers(at("2026-01-01T00:00:00+00:00"), at("2027-01-01T00:00:00+00:00")),
)
def test_a_partitions_deadline_is_the_first_tick_at_or_after_its_end_and_its_finding(
    cron: str, span_end: int, pending: int
) -> None:
    schedule = GroupSchedule(cron=cron)
    deadline = partition_deadline(schedule, span_end, pending)
    start = max(span_end, pending)
    assert deadline >= start and schedule.latest_tick(deadline) == deadline  # a deadline, at or after both
    assert schedule.previous_tick(deadline) < start  # the first such: no deadline in [start, deadline)


def test_a_rule_with_a_partitioned_and_an_unpartitioned_group_keeps_max_wait_per_partition_and_per_group_run() -> None:
    data = promising(maxWaitSeconds=HOUR)
    data["groups"].append({"groupId": "u", "members": [{"assetKey": DIM}]})
    lake = Lake(parse_rule("daily", data))
    explainer, check = watching(lake)
    created = lake.now
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.deliver()
    lake.now = created + HOUR * 1000
    found = {(o["kind"], o.get("partition")) for o in explainer.explain("daily")["freshness"]["overdue"]}
    assert found == {("MAX_WAIT", None), ("MAX_WAIT", "dt=2026-12-01")}  # no group run since creation; the day
    lake.commit(DIM, 5)
    lake.deliver()  # the unpartitioned group runs: only the day is overdue
    assert [(o.kind, o.partition) for o in check().rules["daily"]] == [(OverdueKind.MAX_WAIT, "dt=2026-12-01")]
