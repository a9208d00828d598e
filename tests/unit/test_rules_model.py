"""The rule model: what PUT /rules/{ruleId} accepts, and 400s that name the bad field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lakehook.domain.errors import ValidationError
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import MAX_ASSETS_PER_RULE, BackfillPolicy, Mode, Rule, parse_duration_ms
from lakehook.usecases.rules import parse_rule

ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"

# The contract example of DESIGN.md, verbatim.
CONTRACT: dict[str, Any] = {
    "description": "DWD trade events once both ODS tables advanced",
    "groups": [
        {
            "groupId": "trade_event_group",
            "members": [
                {"assetKey": ORDERS, "condition": {"snapshotRequired": True, "qualityStatus": "PASSED"}},
                {"assetKey": PAYMENTS, "condition": {"snapshotRequired": True, "schemaStatus": "COMPATIBLE"}},
            ],
        }
    ],
    "policy": {"mode": "ALL_UPDATED", "minIntervalSeconds": 0, "quietPeriodSeconds": 0},
    "target": {
        "type": "webhook",
        "url": "https://scheduler.example.com/hooks/dwd",
        "secretRef": "lakehook/targets/dwd",
    },
    "enabled": True,
}


def body(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(CONTRACT)
    data.update(changes)
    return data


def member_condition(condition: dict[str, Any]) -> dict[str, Any]:
    data = body()
    data["groups"][0]["members"][0]["condition"] = condition
    return data


def refused(rule_id: str, data: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse_rule(rule_id, data)
    return caught.value


def test_the_contract_example_parses_and_round_trips() -> None:
    rule = parse_rule("dwd_trade_event_fact", body())
    assert rule.rule_id == "dwd_trade_event_fact"
    assert rule.policy.mode is Mode.ALL_UPDATED
    assert rule.asset_keys == [ORDERS, PAYMENTS]
    assert rule.groups[0].members[0].condition.quality_status == "PASSED"
    again = Rule.model_validate(json_form(rule))
    assert again == rule
    assert json_form(rule)["target"]["secretRef"] == "lakehook/targets/dwd"


def test_defaults_are_all_updated_trigger_backfills_enabled() -> None:
    data = body()
    del data["policy"], data["enabled"]
    rule = parse_rule("r", data)
    assert rule.policy.mode is Mode.ALL_UPDATED and rule.policy.backfill is BackfillPolicy.TRIGGER
    assert rule.enabled is True
    assert rule.groups[0].members[0].condition.snapshot_required is True


@pytest.mark.parametrize("rule_id", ["a/b", "has space", "", "x" * 65, "ümlaut", "a#b"])
def test_rule_ids_are_letters_digits_underscore_dash_dot(rule_id: str) -> None:
    error = refused(rule_id, body())
    assert error.field == "ruleId"


def test_dots_dashes_and_underscores_are_fine_in_ids() -> None:
    data = body()
    data["groups"][0]["groupId"] = "g-1.v_2"
    assert parse_rule("dwd.trade-event_fact", data).groups[0].group_id == "g-1.v_2"


def test_bad_group_id_names_the_field() -> None:
    data = body()
    data["groups"][0]["groupId"] = "no/slash"
    error = refused("r", data)
    assert error.field == "groups.0.groupId"
    assert "letters, digits" in str(error)


def test_unknown_condition_field_names_its_path() -> None:
    error = refused("r", member_condition({"qualityStatus": "PASSED", "qualtyStatus": "PASSED"}))
    assert error.field == "groups.0.members.0.condition.qualtyStatus"


def test_quality_status_other_than_passed_is_refused() -> None:
    error = refused("r", member_condition({"qualityStatus": "FAILED"}))
    assert error.field == "groups.0.members.0.condition.qualityStatus"
    assert "PASSED" in str(error)


def test_bad_asset_key_is_named() -> None:
    data = body()
    data["groups"][0]["members"][1]["assetKey"] = "paimon://only-two/parts"
    error = refused("r", data)
    assert error.field == "groups.0.members.1.assetKey"


def test_a_target_needs_a_type() -> None:
    error = refused("r", body(target={"url": "https://x"}))
    assert error.field == "target.type"


def test_mode_must_be_known() -> None:
    error = refused("r", body(policy={"mode": "SOMETIMES"}))
    assert error.field == "policy.mode"


def test_negative_cooldown_is_refused() -> None:
    error = refused("r", body(policy={"minIntervalSeconds": -1}))
    assert error.field == "policy.minIntervalSeconds"


def test_group_ids_are_unique() -> None:
    data = body()
    data["groups"].append(copy.deepcopy(data["groups"][0]))
    error = refused("r", data)
    assert error.field == "groups" and "trade_event_group" in str(error)


def test_an_asset_appears_once_per_group() -> None:
    data = body()
    data["groups"][0]["members"][1]["assetKey"] = ORDERS
    error = refused("r", data)
    assert error.field == "groups.0.members" and "twice" in str(error)


def test_too_many_distinct_assets_is_refused() -> None:
    members = [{"assetKey": f"paimon://lake/db/t{i}"} for i in range(MAX_ASSETS_PER_RULE + 1)]
    error = refused(
        "r", body(groups=[{"groupId": "g", "members": members[:40]}, {"groupId": "h", "members": members[40:]}])
    )
    assert error.field == "groups" and str(MAX_ASSETS_PER_RULE) in str(error)


def test_no_groups_or_no_members_is_refused() -> None:
    assert refused("r", body(groups=[])).field == "groups"
    empty = refused("r", body(groups=[{"groupId": "g", "members": []}]))
    assert empty.field == "groups.0" and "a group has members, a schedule, or both" in str(empty)


def test_body_rule_id_must_match_the_path() -> None:
    error = refused("r", body(ruleId="other"))
    assert error.field == "ruleId"


def test_a_body_that_is_not_an_object_is_refused() -> None:
    assert refused("r", [1, 2]).field == "body"


def test_watermark_at_least_takes_epoch_ms_or_iso() -> None:
    rule = parse_rule("r", member_condition({"watermarkAtLeast": "2025-06-01T00:00:00Z"}))
    assert rule.groups[0].members[0].condition.watermark_floor == 1_748_736_000_000
    rule = parse_rule("r", member_condition({"watermarkAtLeast": 5}))
    assert rule.groups[0].members[0].condition.watermark_floor == 5


def test_window_spec_parses_and_bad_durations_name_the_field() -> None:
    rule = parse_rule("r", member_condition({"watermarkAtLeast": {"window": "PT1H", "allowedLatenessSeconds": 300}}))
    window = rule.groups[0].window
    assert window is not None and window.size_ms == 3_600_000 and window.lateness_ms == 300_000
    error = refused("r", member_condition({"watermarkAtLeast": {"window": "1 hour"}}))
    assert error.field == "groups.0.members.0.condition.watermarkAtLeast.window"
    assert "ISO 8601" in str(error)
    error = refused("r", member_condition({"watermarkAtLeast": {"window": "PT1H", "lateness": 3}}))
    assert error.field == "groups.0.members.0.condition.watermarkAtLeast.lateness"


def test_windowed_members_of_a_group_share_the_window() -> None:
    data = member_condition({"watermarkAtLeast": {"window": "PT1H"}})
    data["groups"][0]["members"][1]["condition"] = {"watermarkAtLeast": {"window": "P1D"}}
    error = refused("r", data)
    assert error.field == "groups.0.members" and "same window" in str(error)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H", 3_600_000),
        ("P1D", 86_400_000),
        ("PT15M", 900_000),
        ("P1DT12H", 129_600_000),
        ("PT30S", 30_000),
        ("P1W", 604_800_000),
    ],
)
def test_iso_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["P", "PT", "P1M", "PT0S", "1H", "P1DT"])
def test_durations_without_a_fixed_length_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"duration|longer than zero"):
        parse_duration_ms(text)


def test_spool_conditions_parse_and_wait_for_no_snapshot_unless_asked() -> None:
    coverage = {"coverage": {"window": "PT1H", "allowedLatenessSeconds": 600}}
    condition = parse_rule("r", member_condition(coverage)).groups[0].members[0].condition
    assert condition.coverage is not None and condition.coverage.size_ms == 3_600_000
    assert condition.coverage.lateness_ms == 600_000 and condition.snapshot_required is False
    sealed = parse_rule("r", member_condition({"manifest": "SEALED", "snapshotRequired": True}))
    assert sealed.groups[0].members[0].condition.snapshot_required is True
    done = parse_rule("r", member_condition({"backfillStatus": "COMPLETED"})).groups[0].members[0].condition
    assert done.backfill_status == "COMPLETED" and done.snapshot_required is True


@pytest.mark.parametrize(
    ("condition", "field", "words"),
    [
        ({"coverage": {"start": "2025-06-01T00:00:00Z", "end": "2025-06-02T00:00:00Z"}}, "coverage", "window"),
        ({"coverage": {"window": "P1M"}}, "coverage.window", "duration"),
        ({"manifest": "INTERRUPTED"}, "manifest", "SEALED"),
        ({"backfillStatus": "RUNNING"}, "backfillStatus", "COMPLETED"),
    ],
)
def test_spool_conditions_check_their_type_naming_the_field(condition: dict[str, Any], field: str, words: str) -> None:
    error = refused("r", member_condition(condition))
    assert error.field is not None and error.field.startswith(f"groups.0.members.0.condition.{field}")
    assert words in str(error)


def test_coverage_and_watermark_windows_of_one_group_must_agree() -> None:
    data = body()
    data["groups"][0]["members"][0]["condition"] = {"coverage": {"window": "PT1H"}}
    data["groups"][0]["members"][1]["condition"] = {"watermarkAtLeast": {"window": "P1D"}}
    assert "same window" in str(refused("r", data))


def test_an_oversized_rule_is_refused() -> None:
    keys = [f"paimon://lake/ods_db/{'t' * 150}{i}" for i in range(MAX_ASSETS_PER_RULE)]
    groups = [{"groupId": f"g{n}", "members": [{"assetKey": k} for k in keys]} for n in range(5)]
    error = refused("r", body(groups=groups))
    assert "limit" in str(error)
