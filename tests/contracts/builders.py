"""Claims, cursors and request answers to feed the contract suites (the same values on either backend)."""

from __future__ import annotations

from lakehook.domain.requests import RecordedRequest
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, trigger_key

T0 = 1_750_000_000_000
ASSET = "paimon://lake/ods_db/orders"


def pins(snapshot: int, asset: str = ASSET) -> tuple[PinnedInput, ...]:
    return (PinnedInput(asset_key=asset, snapshot_id=snapshot, schema_id=1, state_version=snapshot),)


def trigger(
    snapshot: int,
    rule_id: str = "dwd",
    group_id: str = "g",
    at: int = T0,
    status: TriggerStatus = TriggerStatus.TRIGGERING,
    sequence: int = 1,
    replay_of: str | None = None,
) -> Trigger:
    pinned = pins(snapshot)
    marker = None if replay_of is None else f"replay-{snapshot}"
    return Trigger(
        trigger_key=trigger_key(rule_id, group_id, pinned, None, 0, marker),
        rule_id=rule_id,
        group_id=group_id,
        status=status,
        inputs=pinned,
        sequence=sequence,
        created_at=at,
        updated_at=at,
        replay_of=replay_of,
    )


def cursor_after(before: GroupCursor, claimed: Trigger) -> GroupCursor:
    return before.after(claimed, {})


def initial(rule_id: str = "dwd", group_id: str = "g") -> GroupCursor:
    return GroupCursor.initial(rule_id, group_id)


def request(key: str, trigger_key_: str, at: int = T0, fingerprint: str = "f" * 64) -> RecordedRequest:
    return RecordedRequest(key, fingerprint, 202, {"triggerKey": trigger_key_}, trigger_key_, at)


def rule(rule_id: str, *assets: str) -> Rule:
    members = [{"assetKey": a} for a in (assets or (ASSET,))]
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "groups": [{"groupId": "g", "members": members}],
            "target": {"type": "webhook", "url": "https://scheduler.example.com/hook", "secretRef": "t/dwd"},
        }
    )
