"""The resolver's DynamoDB adapters on moto: rules and their reverse index, claims and cursors,
batched state reads, the state history, and deferrals."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.deferral_store import DynamoDBDeferralStore
from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.state_history import DynamoDBStateHistory
from lakehook.adapters.dynamodb.state_reader import DynamoDBStateReader
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.state import AssetState
from lakehook.domain.targets import STORED_CONTEXT
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window, trigger_key
from lakehook.ports.rules import ClaimOutcome, Deferral
from tests.support import RequestCounter

A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"
C = "iceberg://glue/ods/c"


def make_rule(rule_id: str, *assets: str, **extra: Any) -> Rule:
    # A target as rules stored before targets were validated on write (the store keeps what it was given).
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "target": {"type": "webhook", **extra},
            "groups": [{"groupId": "g", "members": [{"assetKey": a} for a in assets]}],
        },
        context=STORED_CONTEXT,
    )


def claim(
    store: DynamoDBTriggerStore,
    rule_id: str,
    snapshot: int,
    expected: GroupCursor | None,
    at: int = 1,
    status: TriggerStatus = TriggerStatus.TRIGGERING,
) -> tuple[ClaimOutcome, GroupCursor | None, Trigger]:
    pins = (PinnedInput(asset_key=A, snapshot_id=snapshot, schema_id=3), PinnedInput(asset_key=B, snapshot_id=1))
    base = expected or GroupCursor.initial(rule_id, "g")
    trigger = Trigger(
        trigger_key=trigger_key(rule_id, "g", pins, None, 0),
        rule_id=rule_id,
        group_id="g",
        inputs=pins,
        sequence=base.seq + 1,
        status=status,
        created_at=at,
        updated_at=at,
        reason="why not",
    )
    result = store.claim(trigger, base.after(trigger, {A: "bf1"}), expected)
    return result.outcome, result.cursor, trigger


# --- rules and the reverse index -------------------------------------------------------------------


def test_a_rule_round_trips_with_revision_and_times(table: Any) -> None:
    store = DynamoDBRuleStore(table)
    first = store.put_rule(make_rule("r", A, B), 1000)
    assert (first.revision, first.created_at, first.updated_at) == (1, 1000, 1000)
    again = store.put_rule(make_rule("r", A, B, url="https://x"), 2000)
    assert (again.revision, again.created_at, again.updated_at) == (2, 1000, 2000)
    stored = store.get_rule("r")
    assert stored is not None and json_form(stored.rule)["target"]["url"] == "https://x" and stored.revision == 2
    assert store.get_rule("missing") is None


def test_the_reverse_index_follows_replacements_and_deletes(table: Any) -> None:
    store = DynamoDBRuleStore(table)
    store.put_rule(make_rule("r1", A, B), 1)
    store.put_rule(make_rule("r2", B), 1)
    assert sorted(r.rule_id for r in store.rules_for_asset(B)) == ["r1", "r2"]
    store.put_rule(make_rule("r1", A, C), 2)  # B is no longer a member of r1
    assert [r.rule_id for r in store.rules_for_asset(B)] == ["r2"]
    assert [r.rule_id for r in store.rules_for_asset(C)] == ["r1"]
    assert store.rules_for_asset(A)[0].asset_keys == [A, C]  # the index carries the new rule
    assert store.delete_rule("r1") is True
    assert store.rules_for_asset(A) == [] and store.rules_for_asset(C) == []
    assert store.delete_rule("r1") is False


def test_rules_of_an_asset_cost_one_query_even_with_state_and_events_beside_them(
    table: Any, counter: RequestCounter
) -> None:
    store = DynamoDBRuleStore(table)
    for i in range(5):
        store.put_rule(make_rule(f"r{i}", A), 1)
    table.put_item(Item={**keys.state_key(A), "itemType": "STATE", "version": 1})
    table.put_item(Item={**keys.event_key(A, "e1"), "itemType": "EVENT"})
    with counter.measure() as calls:
        found = store.rules_for_asset(A)
    assert sorted(r.rule_id for r in found) == [f"r{i}" for i in range(5)]
    assert dict(calls) == {"Query": 1}


def test_rules_past_one_megabyte_of_answer_are_all_returned(table: Any, counter: RequestCounter) -> None:
    store = DynamoDBRuleStore(table)
    for i in range(60):  # 60 copies of a ~30 KB rule: the query answer spans pages
        store.put_rule(make_rule(f"big{i:02d}", A, blob="x" * 30_000), 1)
    with counter.measure() as calls:
        found = store.rules_for_asset(A)
    assert len(found) == 60
    assert calls["Query"] >= 2


def test_a_put_that_loses_a_race_retries_and_keeps_the_index_exact(table: Any) -> None:
    class Raced(DynamoDBRuleStore):
        """Another put lands between this put's read and its transaction, once."""

        raced = False

        def _meta(self, rule_id: str) -> dict[str, Any] | None:
            seen = super()._meta(rule_id)
            if not self.raced:
                self.raced = True
                DynamoDBRuleStore(table).put_rule(make_rule(rule_id, B), 2)
            return seen

    DynamoDBRuleStore(table).put_rule(make_rule("r", A), 1)
    stored = Raced(table).put_rule(make_rule("r", C), 3)
    assert stored.revision == 3  # 1: A, 2: the racer's B, 3: ours
    store = DynamoDBRuleStore(table)
    assert [r.rule_id for r in store.rules_for_asset(C)] == ["r"]
    assert store.rules_for_asset(A) == [] and store.rules_for_asset(B) == []  # the racer's index is gone too


def test_rules_are_listed_in_pages_and_fetched_in_one_batch(table: Any, counter: RequestCounter) -> None:
    store = DynamoDBRuleStore(table)
    for i in range(5):
        store.put_rule(make_rule(f"r{i}", A), 1)
    first = store.list_rules(limit=3)
    assert [s.rule.rule_id for s in first.items] == ["r0", "r1", "r2"] and first.next_token
    second = store.list_rules(limit=3, next_token=first.next_token)
    assert [s.rule.rule_id for s in second.items] == ["r3", "r4"] and second.next_token is None
    with counter.measure() as calls:
        found = store.get_rules(["r1", "r4", "nope", "r1"])
    assert sorted(found) == ["r1", "r4"] and dict(calls) == {"BatchGetItem": 1}


# --- claims and cursors ------------------------------------------------------------------------------


def test_a_claim_is_one_transaction_and_each_key_is_claimed_once(table: Any, counter: RequestCounter) -> None:
    store = DynamoDBTriggerStore(table)
    with counter.measure() as calls:
        outcome, _, trigger = claim(store, "r", 5, None)
    assert outcome is ClaimOutcome.CLAIMED and dict(calls) == {"TransactWriteItems": 1}
    again, now, _ = claim(store, "r", 5, None)
    assert again is ClaimOutcome.DUPLICATE and now is not None and now.seq == 1  # the winner's cursor, no read
    stored = store.get(trigger.trigger_key)
    assert stored == trigger
    assert stored is not None and stored.inputs[0].schema_id == 3 and stored.reason == "why not"


def test_a_claim_from_a_moved_cursor_loses_and_learns_the_new_cursor(table: Any, counter: RequestCounter) -> None:
    store = DynamoDBTriggerStore(table)
    _, first, _ = claim(store, "r", 5, None)
    claim(store, "r", 6, first)
    with counter.measure() as calls:
        outcome, seen, _ = claim(store, "r", 7, first)  # stale: the cursor is at 6 now
    assert outcome is ClaimOutcome.CURSOR_MOVED and dict(calls) == {"TransactWriteItems": 1}
    assert seen is not None and seen.seq == 2 and seen.pins[A].snapshot_id == 6 and seen.backfills == {A: "bf1"}


def test_triggers_list_newest_first_by_status_in_pages(table: Any) -> None:
    store = DynamoDBTriggerStore(table)
    cursor = None
    for sid in range(1, 8):
        status = TriggerStatus.SKIPPED if sid % 3 == 0 else TriggerStatus.TRIGGERING
        _, cursor, _ = claim(store, "r", sid, cursor, at=1000 + sid, status=status)
    claim(store, "other", 1, None)
    page = store.list_for_rule("r", limit=4)
    assert [t.inputs[0].snapshot_id for t in page.items] == [7, 6, 5, 4] and page.next_token
    rest = store.list_for_rule("r", limit=4, next_token=page.next_token)
    assert [t.inputs[0].snapshot_id for t in rest.items] == [3, 2, 1] and rest.next_token is None
    skipped = store.list_for_rule("r", TriggerStatus.SKIPPED, limit=10)
    assert [t.inputs[0].snapshot_id for t in skipped.items] == [6, 3]


def test_windows_survive_the_round_trip(table: Any) -> None:
    store = DynamoDBTriggerStore(table)
    pins = (PinnedInput(asset_key=A, snapshot_id=1),)
    window = Window(start=0, end=3_600_000)
    trigger = Trigger(
        trigger_key=trigger_key("w", "g", pins, window, 0),
        rule_id="w",
        group_id="g",
        inputs=pins,
        window=window,
        created_at=5,
        updated_at=5,
    )
    store.claim(trigger, GroupCursor.initial("w", "g").after(trigger, {}), None)
    assert store.get(trigger.trigger_key) == trigger
    assert store.get_cursors([("w", "g")])[("w", "g")].window == window


# --- batched reads -------------------------------------------------------------------------------------


def test_states_and_cursors_come_in_one_batch_get(table: Any, counter: RequestCounter) -> None:
    table.put_item(
        Item={
            **keys.state_key(A),
            "itemType": "STATE",
            "assetKey": A,
            "version": 3,
            "latestSnapshotId": 7,
            "tags": {"t1"},
        }
    )
    table.put_item(
        Item={
            **keys.state_key(C),
            "itemType": "STATE",
            "assetKey": C,
            "version": 1,
            "latestSnapshotId": 9_000_000,
            "latestSnapshotOrder": 4,
        }
    )
    triggers = DynamoDBTriggerStore(table)
    claim(triggers, "r", 7, None)
    reader = DynamoDBStateReader(table)
    with counter.measure() as calls:
        found = reader.read([A, B, C], [("r", "g"), ("r", "h")])
    assert dict(calls) == {"BatchGetItem": 1}
    assert found.states[A].latest_snapshot_id == 7 and found.states[A].tags == {"t1"}
    assert found.states[C].latest_snapshot_order == 4 and B not in found.states
    assert list(found.cursors) == [("r", "g")]


def test_more_than_a_hundred_keys_take_more_pages(table: Any, counter: RequestCounter) -> None:
    assets = [f"paimon://lake/db/t{i:03d}" for i in range(150)]
    with table.batch_writer() as batch:
        for key in assets:
            batch.put_item(Item={**keys.state_key(key), "itemType": "STATE", "version": 1, "latestSnapshotId": 1})
    with counter.measure() as calls:
        states = DynamoDBStateReader(table).get_states(assets)
    assert len(states) == 150 and calls["BatchGetItem"] == 2


def test_unprocessed_keys_are_read_again(table: Any, counter: RequestCounter) -> None:
    # A BatchGetItem answer stops at 16 MB and hands the rest back as UnprocessedKeys.
    assets = [f"paimon://lake/db/big{i:02d}" for i in range(50)]
    for key in assets:
        table.put_item(
            Item={
                **keys.state_key(key),
                "itemType": "STATE",
                "version": 1,
                "latestSnapshotId": 2,
                "padding": "x" * 380_000,
            }
        )
    with counter.measure() as calls:
        states = DynamoDBStateReader(table).get_states(assets)
    assert len(states) == 50 and all(s.latest_snapshot_id == 2 for s in states.values())
    assert calls["BatchGetItem"] >= 2


# --- history and deferrals -------------------------------------------------------------------------------


def test_history_keeps_states_by_version_with_a_ttl(table: Any) -> None:
    history = DynamoDBStateHistory(table, retention_days=2)
    states = [AssetState(asset_key=A, version=v, latest_snapshot_id=v * 10, tags={"x"}) for v in (3, 4, 5, 12)]
    history.record({A: states, B: [AssetState(asset_key=B, version=4)]}, now_ms=1_000_000)
    history.record({A: states[:1]}, now_ms=1_000_000)  # idempotent
    assert [s.latest_snapshot_id for s in history.between(A, 4, 12)] == [40, 50, 120]
    assert history.between(A, 4, 12)[0].tags == {"x"}
    assert history.between(A, 6, 11) == [] and history.between(A, 5, 4) == []
    item = table.get_item(Key=keys.history_key(A, 3))["Item"]
    assert int(item["expiresAt"]) == 1_000 + 2 * 86_400 and item["itemType"] == "STATE_HISTORY"


def test_deferrals_are_found_when_due_and_marked_once(table: Any) -> None:
    store = DynamoDBDeferralStore(table)
    store.defer(Deferral("r", "g", 5_000))
    store.defer(Deferral("r", "h", 9_000))
    store.defer(Deferral("r", "g", 6_000))  # a later ask replaces the earlier one
    assert store.due(4_000, 10) == []
    assert store.due(6_000, 10) == [Deferral("r", "g", 6_000)]
    assert store.mark_due(Deferral("r", "g", 6_000), 6_001) is True
    assert store.mark_due(Deferral("r", "g", 6_000), 6_002) is False  # already marked
    assert store.due(10_000, 10) == [Deferral("r", "h", 9_000)]
    item = table.get_item(Key=keys.deferral_key("r", "g"))["Item"]
    assert item["status"] == "DUE" and "GSI1PK" not in item


def test_a_deferral_pushed_back_meanwhile_is_not_marked(table: Any) -> None:
    store = DynamoDBDeferralStore(table)
    store.defer(Deferral("r", "g", 5_000))
    seen = store.due(5_000, 10)
    store.defer(Deferral("r", "g", 8_000))
    assert store.mark_due(seen[0], 5_001) is False


@pytest.mark.parametrize("limit", [1, 3])
def test_due_respects_its_limit(table: Any, limit: int) -> None:
    store = DynamoDBDeferralStore(table)
    for i in range(5):
        store.defer(Deferral("r", f"g{i}", 1_000 + i))
    assert [d.group_id for d in store.due(9_999, limit)] == [f"g{i}" for i in range(limit)]
