"""Runs confirmed by the data they wrote (docs/rules.md#confirmed-by-the-data-confirm), with the in-memory fakes of our
own ports: the property's reading and writing, the rule's ``confirm``, the dispatcher's ``confirmBy``, ConfirmRuns
and the NOT_ADVANCED sweep, the format readers' commit metadata, and a model of every order in which commits,
sweeps and reports may arrive. The same on real tables: tests/integration/test_run_confirmation.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lakehook.adapters.lakehouse.delta import commit_snapshot
from lakehook.adapters.lakehouse.hudi import Instant, instant_snapshot
from lakehook.answers.triggers import TriggerAnswer
from lakehook.client import TRIGGER_KEY_PROPERTY, commit_properties, user_metadata
from lakehook.domain.completion import CompletionRecord
from lakehook.domain.confirmation import ConfirmationState, trigger_key_in, trigger_key_in_text
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.snapshots import SnapshotInfo
from lakehook.domain.targets import STORED_CONTEXT
from lakehook.ports.rules import StoredRule, UnreadableRuleError
from lakehook.receiver import parse_invocation
from lakehook.usecases.confirmation import ConfirmOutcome, ConfirmRuns, SweepNotAdvanced
from tests.fakes.memory_rules import InMemoryRuleStore
from tests.hypothesis_profiles import examples
from tests.unit.test_dispatch_usecase import T0, WEBHOOK, World, make_world

OUTLET = "iceberg://lake/dwd/orders"
WITHIN = 600
KEYS = st.from_regex(r"[A-Za-z0-9_-]{1,20}\.[A-Za-z0-9_-]{1,20}(\.[a-z0-9-]{1,10})?\.[0-9a-f]{24}", fullmatch=True)


def confirmed_rule(rule_id: str = "dwd", confirm: dict[str, Any] | None = None) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods/orders"}]}],
            "target": WEBHOOK,
            "outlets": [OUTLET],
            "confirm": confirm or {"withinSeconds": WITHIN},
        },
        context=STORED_CONTEXT,
    )


def started(world: World, snapshot: int = 1) -> str:
    key = world.claim(snapshot)
    assert world.dispatch(key).status.value == "SUCCEEDED"
    return key


def commit(key: str | None, snapshot: int = 7, kind: str = "APPEND") -> SnapshotInfo:
    return SnapshotInfo(snapshot_id=snapshot, commit_time=T0 + 1, commit_kind=kind, trigger_key=key)


@pytest.fixture
def world() -> World:
    made = make_world()
    made.rules.put_rule(confirmed_rule(), T0)
    return made


# --- the property ------------------------------------------------------------------------------------------------


@given(KEYS)
@settings(max_examples=examples(100), deadline=None)
def test_every_writer_form_of_the_property_reads_back_as_the_key(key: str) -> None:
    assert trigger_key_in(commit_properties(key)) == key  # pyiceberg, pypaimon, delta-rs
    assert trigger_key_in_text(user_metadata(key)) == key  # Spark's userMetadata, as lakehook.client writes it
    assert trigger_key_in_text(f"job=nightly, {TRIGGER_KEY_PROPERTY}={key}; owner=bi") == key  # written by hand
    assert parse_invocation(invocation_of(key)).commit_properties == {TRIGGER_KEY_PROPERTY: key}


@given(st.text(max_size=80))
@settings(max_examples=examples(200), deadline=None)
def test_text_without_the_property_names_no_key(text: str) -> None:
    if TRIGGER_KEY_PROPERTY not in text:
        assert trigger_key_in_text(text) is None


@pytest.mark.parametrize("value", ["", "a b", "x/y", "é.g.abc", 7, None, "k" * 301])
def test_a_value_that_is_no_trigger_key_is_neither_read_nor_written(value: Any) -> None:
    assert trigger_key_in({TRIGGER_KEY_PROPERTY: value}) is None
    with pytest.raises(ValueError, match="is not a trigger key"):
        commit_properties(value)


def invocation_of(key: str) -> dict[str, Any]:
    return {
        "triggerKey": key,
        "ruleId": "dwd",
        "groupId": "g",
        "inputs": [],
        "manifestUri": "s3://m/x.json",
        "attempt": 1,
        "completionPath": f"/runs/{key}/complete",
    }


# --- the readers -------------------------------------------------------------------------------------------------


def test_delta_reads_the_key_from_delta_rs_metadata_or_sparks_user_metadata() -> None:
    key = "dwd.g.000000000000000000000001"
    rs = commit_snapshot(3, {"operation": "WRITE", "timestamp": T0, TRIGGER_KEY_PROPERTY: key})
    spark = commit_snapshot(4, {"operation": "WRITE", "timestamp": T0, "userMetadata": user_metadata(key)})
    plain = commit_snapshot(5, {"operation": "WRITE", "timestamp": T0, "userMetadata": "backfill of June"})
    assert (rs.trigger_key, spark.trigger_key, plain.trigger_key) == (key, key, None)


def test_hudi_reads_the_key_from_extra_metadata() -> None:
    key = "dwd.g.000000000000000000000001"
    instant = Instant(instant=20261207102200000, action="commit", file="20261207102200000.commit")
    written = instant_snapshot(instant, {"operationType": "UPSERT", "extraMetadata": {TRIGGER_KEY_PROPERTY: key}})
    other = instant_snapshot(instant, {"operationType": "UPSERT", "extraMetadata": {"schema": "{}"}})
    assert (written.trigger_key, other.trigger_key) == (key, None)


# --- the rule ----------------------------------------------------------------------------------------------------


def test_confirm_needs_outlets_and_a_window() -> None:
    body = json_form(confirmed_rule())
    with pytest.raises(ValidationError, match="confirm: a run is confirmed by its commit to one of the rule's outlets"):
        Rule.model_validate({**body, "outlets": []})
    for bad in (0, -1, 6 * 86_400 + 1, "soon"):
        with pytest.raises(ValidationError, match="withinSeconds"):
            Rule.model_validate({**body, "confirm": {"withinSeconds": bad}})
    with pytest.raises(ValidationError, match="withinSecond"):
        Rule.model_validate({**body, "confirm": {"withinSecond": 60}})
    assert Rule.model_validate(body).confirm.within_seconds == WITHIN  # type: ignore[union-attr]


# --- the dispatcher's window -------------------------------------------------------------------------------------


def test_a_started_run_of_a_rule_with_confirm_has_its_window_from_the_start(world: World) -> None:
    world.clock.advance(5)
    key = started(world)
    entry = world.ledger.get(key)
    assert entry is not None and entry.trigger.confirm_by == world.clock.now + WITHIN * 1000
    assert TriggerAnswer.from_domain(entry.trigger).dump()["confirmBy"] is not None


def test_a_run_of_a_rule_without_confirm_has_no_window() -> None:
    world = make_world()
    key = started(world)
    entry = world.ledger.get(key)
    assert entry is not None and entry.trigger.confirm_by is None
    assert (
        "confirmBy" not in TriggerAnswer.from_domain(entry.trigger).dump()
        and "confirmation" not in TriggerAnswer.from_domain(entry.trigger).dump()
    )
    assert SweepNotAdvanced(world.ledger, world.rules, clock=lambda: T0 + 10**9)() == []


# --- which commits confirm ---------------------------------------------------------------------------------------


def test_which_commits_confirm_and_which_do_not(world: World) -> None:
    key, other = started(world, 1), started(world, 2)
    confirm = ConfirmRuns(world.ledger, world.rules, clock=world.clock.ms)
    outcomes = confirm(OUTLET, [commit(None, 1), commit(key, 2, kind="REPLACE"), commit(other, 3)])
    assert [(r.trigger_key, r.outcome) for r in outcomes] == [
        (key, ConfirmOutcome.NO_DATA_CHANGE),
        (other, ConfirmOutcome.CONFIRMED),
    ]
    assert confirm("iceberg://lake/tmp/scratch", [commit(key, 4)])[0].outcome is ConfirmOutcome.NOT_AN_OUTLET
    assert confirm(OUTLET, [commit("dwd.g.nosuchtrigger000000001", 5)])[0].outcome is ConfirmOutcome.NO_TRIGGER
    assert world.ledger.get(key).trigger.confirmation is None  # type: ignore[union-attr]

    assert confirm(OUTLET, [commit(key, 6)])[0].outcome is ConfirmOutcome.CONFIRMED
    assert confirm(OUTLET, [commit(key, 6), commit(key, 8)])[0].outcome is ConfirmOutcome.ALREADY  # redelivered
    confirmation = world.ledger.get(key).trigger.confirmation  # type: ignore[union-attr]
    assert (confirmation.state, confirmation.snapshot_id) == (ConfirmationState.CONFIRMED, 6)  # type: ignore[union-attr]


# --- every order of commits, sweeps and reports ------------------------------------------------------------------

EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), st.sampled_from(["own", "other", "none"]), st.booleans(), st.booleans()),
        st.tuples(st.just("sweep"), st.integers(0, 2 * WITHIN)),
        st.tuples(st.just("report"), st.sampled_from(["SUCCEEDED", "FAILED"])),
    ),
    max_size=12,
)


@given(EVENTS)
@settings(max_examples=examples(150), deadline=None)
def test_the_confirmation_follows_the_model_in_any_order(events: list[tuple[Any, ...]]) -> None:
    """Model: CONFIRMED by the first data commit carrying the key to an outlet (late after NOT_ADVANCED); NOT_ADVANCED
    by a sweep past the window while unconfirmed, unless the run reported FAILED first; nothing else changes it."""
    world = make_world()
    world.rules.put_rule(confirmed_rule(), T0)
    key, other = started(world, 1), started(world, 2)
    start = world.clock.now
    confirm = ConfirmRuns(world.ledger, world.rules, clock=world.clock.ms)
    expected: tuple[ConfirmationState, bool] | None = None
    reported: str | None = None
    for n, event in enumerate(events):
        if event[0] == "commit":
            _, whose, data, to_outlet = event
            named = {"own": key, "other": other, "none": None}[whose]
            confirm(
                OUTLET if to_outlet else "iceberg://lake/tmp/x", [commit(named, n, "APPEND" if data else "REPLACE")]
            )
            if (
                whose == "own"
                and data
                and to_outlet
                and (expected is None or expected[0] is not ConfirmationState.CONFIRMED)
            ):
                expected = (ConfirmationState.CONFIRMED, expected is not None)
        elif event[0] == "sweep":
            at = start + event[1] * 1000
            SweepNotAdvanced(world.ledger, world.rules, clock=lambda at=at: at)()
            if expected is None and event[1] >= WITHIN and reported != "FAILED":
                expected = (ConfirmationState.NOT_ADVANCED, False)
        else:
            world.ledger.record_completion(key, CompletionRecord.of(event[1], [], start))
            reported = reported or event[1]
    found = world.ledger.get(key).trigger.confirmation  # type: ignore[union-attr]
    assert (None if found is None else (found.state, found.late)) == expected, json.dumps(events)


# --- what people see ---------------------------------------------------------------------------------------------


def test_the_cli_says_what_the_outlets_show(world: World) -> None:
    from lakehook.cli_commands.commands import confirmation_lines
    from lakehook.cli_commands.watch import signature

    key = started(world)
    awaited = TriggerAnswer.from_domain(world.ledger.get(key).trigger).dump()  # type: ignore[union-attr]
    assert [line.split(" by ")[0] for line in confirmation_lines(awaited)] == [
        "  awaiting an outlet commit carrying the trigger key"
    ]
    ConfirmRuns(world.ledger, world.rules, clock=world.clock.ms)(OUTLET, [commit(key, 42)])
    shown = TriggerAnswer.from_domain(world.ledger.get(key).trigger).dump()  # type: ignore[union-attr]
    (line,) = confirmation_lines(shown)
    assert line.startswith(f"  confirmed by the data: {OUTLET} snapshot 42, committed ")
    assert signature(shown) != signature(awaited)  # lakehook watch reports the change
    assert list(confirmation_lines({"status": "SUCCEEDED", "runStatus": "SUCCEEDED"})) == []  # no confirm: no line


def test_a_rule_that_does_not_load_decides_nothing_and_stops_no_poll(world: World) -> None:
    key = started(world)

    class Unreadable(InMemoryRuleStore):
        def get_rule(self, rule_id: str) -> StoredRule | None:
            raise UnreadableRuleError(rule_id, "written by an incompatible version")

    (result,) = ConfirmRuns(world.ledger, Unreadable(), clock=world.clock.ms)(OUTLET, [commit(key)])
    assert result.outcome is ConfirmOutcome.RULE_UNREADABLE
    assert world.ledger.get(key).trigger.confirmation is None  # type: ignore[union-attr]
