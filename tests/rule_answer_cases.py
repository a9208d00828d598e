"""A varied set of stored rules and dry runs, the shapes a rule route answers: every target type, partitioned and
scheduled groups, a require tree, members by alias, every policy knob, freshness, confirm and outlets, a disabled
rule, a last error with and without its group, a stored target that no longer loads, and dry runs with and without
the runs they would start. ``tests/unit/test_rule_answers_unchanged.py`` checks their bodies byte for byte."""

from __future__ import annotations

from typing import Any

from lakehook.domain.rules import Rule
from lakehook.domain.triggers import PinnedInput, Trigger, Window
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.rules import RuleError, StoredRule
from lakehook.usecases.rules import parse_rule
from tests.unit.test_rule_targets import VALID

T0 = 1_764_547_200_123  # 2025-12-01T00:00:00.123Z
A, B = "paimon://lake/ods_db/orders", "iceberg://glue/db/payments"
LOCAL = UrlPolicy(local_mode=True)

TARGETS: dict[str, dict[str, Any]] = {
    "webhook": {
        "type": "webhook",
        "url": "https://scheduler.example.com/hooks/dwd",
        "secretRef": "lakehook/targets/dwd",
        "timeoutSeconds": 7.5,
    },
    "stepfunctions": VALID["stepfunctions"],
    "lambda": VALID["lambda"],
    "eventbridge": {**VALID["eventbridge"], "source": "lakehook.example"},
    "airflow": VALID["airflow"],
    "dolphinscheduler": VALID["dolphinscheduler"],
    "glue": {"type": "glue", "jobName": "lakehook-j", "arguments": {"--day": "ü", "--n": "2"}},
    "emrserverless": {
        "type": "emrserverless",
        "applicationId": "00fabcdef1234567",
        "executionRoleArn": "arn:aws:iam::123456789012:role/lakehook-emr",
        "jobDriver": {"sparkSubmit": {"entryPoint": "s3://code/dwd.py", "entryPointArguments": ["--x", "1"]}},
    },
    "batch": {"type": "batch", "jobQueue": "lakehook-q", "jobDefinition": "lakehook-d:12"},
    "ecs": {"type": "ecs", "cluster": "lakehook-etl", "taskDefinition": "lakehook-dwd:3", "containerName": "dwd"},
    "databricks": {
        "type": "databricks",
        "host": "https://dbc-1234.cloud.databricks.com",
        "jobId": 9_007_199_254_740_993,  # above 2**53: exact in the body
        "tokenRef": "lakehook/targets/databricks",
    },
}
EVENTBRIDGE = TARGETS["eventbridge"]

BODIES: dict[str, dict[str, Any]] = {
    "minimal": {"groups": [{"groupId": "g", "members": [{"assetKey": A}]}], "target": TARGETS["lambda"]},
    **{
        f"target_{kind}": {"groups": [{"groupId": "g", "members": [{"assetKey": A}]}], "target": target}
        for kind, target in TARGETS.items()
    },
    "documented": {
        "description": "DWD trade events once both ODS tables advanced — ünïcode",
        "groups": [
            {
                "groupId": "trade_event_group",
                "members": [
                    {"assetKey": A, "alias": "orders", "condition": {"snapshotRequired": True}},
                    {"assetKey": B, "condition": {"snapshotRequired": True, "qualityStatus": "PASSED"}},
                ],
            }
        ],
        "policy": {"mode": "ALL_UPDATED", "minIntervalSeconds": 60, "quietPeriodSeconds": 30},
        "target": EVENTBRIDGE,
        "outlets": ["paimon://lake/dwd_db/"],
        "enabled": True,
    },
    "partitioned": {
        "groups": [
            {
                "groupId": "daily",
                "partitionBy": ["dt"],
                "partitionTimezone": "Asia/Shanghai",
                "members": [{"assetKey": A, "partition": {}}, {"assetKey": B, "partition": {}}],
            }
        ],
        "policy": {"mode": "EACH_VERSION", "startFrom": "NEXT_CHANGE", "maxRunsPerEvaluation": 5},
        "freshness": {"partitionMaxAgeSeconds": 7200},
        "target": EVENTBRIDGE,
    },
    "scheduled_and_required": {
        "groups": [
            {
                "groupId": "at_six",
                "schedule": {"cron": "0 6 * * *", "timezone": "Europe/Berlin"},
                "members": [{"assetKey": A, "condition": {"qualityStatus": "PASSED"}}],
            },
            {
                "groupId": "either",
                "members": [
                    {"assetKey": A, "name": "a", "condition": {"qualityStatus": "PASSED"}},
                    {"assetKey": B, "name": "b", "condition": {"watermarkAtLeast": "2025-06-02T00:00:00Z"}},
                ],
                "require": {"atLeast": 1, "of": ["a", "b"]},
                "runWindow": {"start": "22:00", "end": "05:00", "timezone": "Europe/Berlin", "days": ["MON", "FRI"]},
            },
            {
                "groupId": "tagged",
                "members": [
                    {"assetKey": A, "condition": {"tag": "month-end"}},
                    {
                        "assetKey": B,
                        "condition": {"watermarkAtLeast": {"window": "PT1H", "allowedLatenessSeconds": 300}},
                    },
                ],
            },
        ],
        "policy": {"mode": "ANY_UPDATED", "maxInFlight": 2, "maxRunSeconds": 600},
        "freshness": {"maxWaitSeconds": 3600},
        "target": TARGETS["webhook"],
        "enabled": False,
    },
    "confirmed": {
        "groups": [
            {"groupId": "g", "members": [{"assetKey": A, "condition": {"minSnapshotId": 9_007_199_254_740_993}}]}
        ],
        "policy": {"backfill": "SKIP"},
        "target": EVENTBRIDGE,
        "outlets": ["paimon://lake/dwd_db/fact", "paimon://lake/dws_db/"],
        "confirm": {"withinSeconds": 900},
    },
}


def rules() -> dict[str, Rule]:
    """Each body as a PUT takes it (local mode: any URL the targets name)."""
    return {name: parse_rule(name.replace("_", "-"), body, LOCAL) for name, body in BODIES.items()}


def unusable() -> Rule:
    """A stored rule whose target no longer loads (written by an earlier version): still answered as stored."""
    return Rule.from_stored(
        '{"ruleId":"old","groups":[{"groupId":"g","members":[{"assetKey":"' + A + '"}]}],'
        '"target":{"type":"webhook","url":"ftp://old.example.com","retired":true,"none":null}}'
    )


def stored_rules() -> dict[str, StoredRule]:
    """Every rule stored at a revision and times of its own; a few with a last error (with and without its group,
    a message in any script)."""
    made = {name: StoredRule(rule, i + 1, T0 + i, T0 + 1000 * i) for i, (name, rule) in enumerate(rules().items())}
    made["unusable_target"] = StoredRule(unusable(), 7, T0 - 86_400_000, T0)
    errors = {
        "documented": RuleError("groups.0: division by zero in a member's condition", T0 + 5, "trade_event_group"),
        "minimal": RuleError("the rule does not load: ü≠ü", T0 + 6, None),
        "partitioned": RuleError("", 0, "daily"),
    }
    for name, error in errors.items():
        old = made[name]
        rule = old.rule.model_copy(update={"rule_id": f"{old.rule.rule_id}-failed"})
        made[f"{name}_failed"] = StoredRule(rule, old.revision, old.created_at, old.updated_at, error)
    return made


def planned_runs() -> dict[str, tuple[Rule, list[Trigger]]]:
    """Dry runs: a rule and the runs its write would start (none; a plain one; a partitioned and windowed one)."""
    every = rules()
    plain = Trigger(
        trigger_key="tk-1",
        rule_id="minimal",
        group_id="g",
        inputs=(PinnedInput(asset_key=A, snapshot_id=7, snapshot_order=3, commit_time=T0, state_version=4),),
        created_at=T0,
        updated_at=T0,
        reason="ready",
    )
    windowed = Trigger(
        trigger_key="tk-ü",
        rule_id="partitioned",
        group_id="daily",
        inputs=(
            PinnedInput(asset_key=A, snapshot_id=2**63 - 1, commit_time=T0 - 30_000, metadata_location="s3://m/v.json"),
            PinnedInput(asset_key=B, snapshot_id=77, watermark=T0 - 3_600_000),
        ),
        window=Window(start=T0 - 3_600_123, end=T0 - 123),
        partition="dt=2025-12-01",
        created_at=T0,
        updated_at=T0,
    )
    return {
        "nothing": (every["minimal"], []),
        "plain": (every["minimal"], [plain]),
        "partitioned": (every["partitioned"], [windowed, plain]),
        "every_target": (every["target_databricks"], [plain]),
    }
