"""A freshness promise over partition runs (``freshness.partitionMaxAgeSeconds``): a partition a data commit touched
runs within so long of being found pending; explain and the freshness check say which partition is overdue."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.errors import ValidationError
from lakehook.domain.freshness import OverdueKind, partition_overdue
from lakehook.domain.rules import Rule
from lakehook.domain.time import ms_to_iso
from lakehook.usecases.freshness import CheckFreshness
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.rules import parse_rule
from tests.fakes.memory import InMemoryAssetRegistry
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake, daily

HOUR = 3600


def promising(**freshness: Any) -> dict[str, Any]:
    return {**daily().to_api(), "freshness": freshness}


def test_a_partitioned_rule_promises_partition_max_age_and_round_trips() -> None:
    rule = parse_rule("daily", promising(partitionMaxAgeSeconds=HOUR))
    assert rule.freshness is not None and rule.freshness.partition_max_age_seconds == HOUR
    assert Rule.model_validate(rule.to_api()) == rule


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (promising(maxWaitSeconds=HOUR), "freshness", "promise partitionMaxAgeSeconds instead"),
        (promising(expectedBy={"cron": "0 7 * * *"}), "freshness", "promise partitionMaxAgeSeconds instead"),
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
        assert found.to_api()["partition"] == key and ms_to_iso(oldest) in found.reason
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
