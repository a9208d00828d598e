"""The DynamoDB trigger ledger on moto, on claim items the resolver's DynamoDBTriggerStore writes.

Also the whole dispatch on DynamoDB + S3 (moto): the claim's stream record passes the dispatcher's
FilterCriteria, is read by ``handle_dispatch_record``, and ends as a SUCCEEDED claim the resolver's
store and its per-rule listing see.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from lakehook.adapters.dynamodb.keys import trigger_item_key
from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.trigger_ledger import (
    DISPATCH_FILTER_PATTERNS,
    DynamoDBTriggerLedger,
    claimed_trigger_key,
)
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.adapters.s3.manifest_store import S3ManifestStore
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import GroupCursor, PinnedInput, RunState, Trigger, TriggerStatus, trigger_key
from lakehook.local.filters import matches_any
from lakehook.usecases.dispatch import DispatchPolicy, DispatchStatus
from tests.conftest import BUCKET, TABLE
from tests.fakes.memory_dispatch import InMemoryTargetClient
from tests.wiring import dispatch_record, dispatch_trigger

T0 = 1_750_000_000_000
LEASE = 300_000


def resolver_table(table: Any) -> Any:
    """The table as the resolver's stores take it (the boto3 Table resource itself)."""
    return table


@pytest.fixture
def claims(table: Any) -> DynamoDBTriggerStore:
    return DynamoDBTriggerStore(resolver_table(table))


@pytest.fixture
def ledger(table: Any) -> DynamoDBTriggerLedger:
    return DynamoDBTriggerLedger(table)


@pytest.fixture
def rules(table: Any) -> DynamoDBRuleStore:
    store = DynamoDBRuleStore(resolver_table(table))
    for rule_id in ("dwd", "dws"):
        store.put_rule(
            Rule.model_validate(
                {
                    "ruleId": rule_id,
                    "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods/orders"}]}],
                    "target": {"type": "webhook", "url": "https://scheduler.example.com/hook", "secretRef": "t/dwd"},
                }
            ),
            T0,
        )
    return store


_CURSORS: dict[tuple[int, str], GroupCursor] = {}


def claim(
    store: DynamoDBTriggerStore,
    snapshot: int,
    at: int = T0,
    rule_id: str = "dwd",
    status: TriggerStatus = TriggerStatus.TRIGGERING,
) -> str:
    """Claim through the resolver's store: one transaction of the claim and the group cursor."""
    pins = (PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=snapshot),)
    key = trigger_key(rule_id, "g", pins, None, 0)
    ref = (id(store), rule_id)
    cursor = _CURSORS.get(ref)
    base = cursor or GroupCursor.initial(rule_id, "g")
    trigger = Trigger(
        trigger_key=key,
        rule_id=rule_id,
        group_id="g",
        status=status,
        inputs=pins,
        created_at=at,
        updated_at=at,
        sequence=base.seq + 1,
    )
    moved = base.after(trigger, {})
    assert store.claim(trigger, moved, cursor).outcome.value == "CLAIMED"
    _CURSORS[ref] = moved
    return key


def test_the_ledger_reads_the_resolvers_claim(claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger) -> None:
    key = claim(claims, 1001)
    entry = ledger.get(key)
    assert entry is not None and entry.trigger == claims.get(key)
    assert entry.status is TriggerStatus.TRIGGERING and entry.lease_owner is None and entry.is_open()
    assert ledger.get("missing.g.0") is None


def test_an_attempt_is_counted_and_leased_to_one_dispatcher(
    claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger
) -> None:
    key = claim(claims, 1001)
    first = ledger.begin_attempt(key, "a", T0, LEASE)
    assert first is not None and first.number == 1 and first.previous_attempt_at is None
    assert ledger.begin_attempt(key, "b", T0 + 1, LEASE) is None  # leased to a
    again = ledger.begin_attempt(key, "a", T0 + 2, LEASE)  # the holder's next attempt renews the lease
    assert again is not None and again.number == 2 and again.previous_attempt_at == T0
    taken = ledger.begin_attempt(key, "b", T0 + 2 + LEASE + 1, LEASE)  # a's lease ran out
    assert taken is not None and taken.number == 3
    entry = ledger.get(key)
    assert entry is not None and entry.lease_owner == "b" and entry.trigger.attempts == 3
    assert claims.get(key).attempts == 3  # type: ignore[union-attr]


def test_only_the_lease_holder_marks(claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger) -> None:
    key = claim(claims, 1001)
    assert ledger.begin_attempt(key, "a", T0, LEASE) is not None
    assert not ledger.mark_succeeded(key, "b", "run-9", "s3://b/manifests/k.json", T0 + 5)
    assert ledger.mark_succeeded(key, "a", "run-1", "s3://b/manifests/k.json", T0 + 5)
    assert not ledger.mark_succeeded(key, "a", "run-2", None, T0 + 6)  # already terminal: no second mark
    assert not ledger.mark_failed(key, "a", "late", "x", False, None, T0 + 7)
    trigger = claims.get(key)
    assert trigger is not None
    assert trigger.status is TriggerStatus.SUCCEEDED and trigger.target_run_id == "run-1"
    assert trigger.manifest_uri == "s3://b/manifests/k.json" and trigger.updated_at == T0 + 5
    entry = ledger.get(key)
    assert entry is not None and entry.lease_owner is None and entry.lease_until is None
    # The resolver's per-rule listing still finds it, by its new status.
    listed = claims.list_for_rule("dwd", TriggerStatus.SUCCEEDED)
    assert [t.trigger_key for t in listed.items] == [key]


def test_a_retryable_failure_waits_for_its_time_and_only_the_compensator_takes_it(
    claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger
) -> None:
    key = claim(claims, 1001)
    assert ledger.begin_attempt(key, "a", T0, LEASE) is not None
    assert ledger.mark_failed(key, "a", "HTTP 503", "http_503", True, None, T0 + 10, next_attempt_at=T0 + 60_000)
    entry = ledger.get(key)
    assert entry is not None and entry.status is TriggerStatus.FAILED and entry.retryable is True
    assert entry.trigger.reason == "HTTP 503" and entry.failure_code == "http_503" and entry.lease_owner is None
    assert ledger.begin_attempt(key, "b", T0 + 70_000, LEASE) is None  # the stream path does not re-drive
    assert ledger.begin_attempt(key, "c", T0 + 30_000, LEASE, redrive=True) is None  # not due yet
    taken = ledger.begin_attempt(key, "c", T0 + 60_000, LEASE, redrive=True)
    assert taken is not None and taken.number == 2 and taken.before.status is TriggerStatus.FAILED
    entry = ledger.get(key)
    assert entry is not None and entry.status is TriggerStatus.TRIGGERING and entry.retryable is None
    assert entry.next_attempt_at is None


def test_a_terminal_failure_is_never_taken_again(claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger) -> None:
    key = claim(claims, 1001)
    assert ledger.begin_attempt(key, "a", T0, LEASE) is not None
    assert ledger.mark_failed(key, "a", "HTTP 400: no such DAG", "http_400", False, None, T0 + 1)
    assert ledger.begin_attempt(key, "b", T0 + 10**9, LEASE, redrive=True) is None
    assert claims.get(key).reason == "HTTP 400: no such DAG"  # type: ignore[union-attr]


def test_pending_finds_stuck_and_due_claims_only(
    claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger, rules: DynamoDBRuleStore
) -> None:
    now = T0 + 3_600_000
    stuck = claim(claims, 1, at=T0)  # never dispatched, an hour old
    fresh = claim(claims, 2, at=now - 1000)  # just claimed: the stream dispatcher has it
    leased = claim(claims, 3, at=T0)
    assert ledger.begin_attempt(leased, "a", now - 1000, LEASE) is not None
    due = claim(claims, 4, at=T0, rule_id="dws")
    assert ledger.begin_attempt(due, "a", T0, LEASE) is not None
    assert ledger.mark_failed(due, "a", "HTTP 429", "throttled", True, None, T0, next_attempt_at=now - 1)
    later = claim(claims, 5, at=T0, rule_id="dws")
    assert ledger.begin_attempt(later, "a", T0, LEASE) is not None
    assert ledger.mark_failed(later, "a", "HTTP 503", "http_503", True, None, T0, next_attempt_at=now + 60_000)
    dead = claim(claims, 6, at=T0)
    assert ledger.begin_attempt(dead, "a", T0, LEASE) is not None
    assert ledger.mark_failed(dead, "a", "HTTP 404", "http_404", False, None, T0)
    done = claim(claims, 7, at=T0)
    assert ledger.begin_attempt(done, "a", T0, LEASE) is not None
    assert ledger.mark_succeeded(done, "a", "run", None, T0)
    skipped = claim(claims, 8, at=T0, status=TriggerStatus.SKIPPED)
    ancient = claim(claims, 9, at=now - 8 * 86_400_000)  # beyond the 7-day lookback

    found = {e.trigger_key for e in ledger.pending(now, stuck_before_ms=now - 600_000, limit=100)}
    assert found == {stuck, due}
    assert not {fresh, leased, later, dead, done, skipped, ancient} & found
    assert len(ledger.pending(now, now - 600_000, limit=1)) == 1


def test_pending_pages_through_many_claims(
    claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger, rules: DynamoDBRuleStore
) -> None:
    keys = {claim(claims, i, at=T0 + i) for i in range(30)}
    now = T0 + 3_600_000
    found = ledger.pending(now, now - 600_000, limit=100)
    assert {e.trigger_key for e in found} == keys
    assert [e.trigger.created_at for e in found] == sorted(e.trigger.created_at for e in found)


# --- the whole dispatch, from the stream record ---------------------------------------------------------


@pytest.fixture
def bucket(aws: None) -> Iterator[Any]:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    yield s3


def stream_records(ddb_client: Any) -> list[dict[str, Any]]:
    # The regional streams endpoint reaches moto's backend in-process (see tests/integration/test_api.py).
    streams = boto3.client(
        "dynamodbstreams", region_name="us-east-1", endpoint_url="https://streams.dynamodb.us-east-1.amazonaws.com"
    )
    arn = ddb_client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    records: list[Any] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records.extend(streams.get_records(ShardIterator=iterator, Limit=1000)["Records"])
    return records


def test_a_claim_record_is_dispatched_once_on_dynamodb_and_s3(
    claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger, rules: DynamoDBRuleStore, bucket: Any, ddb_client: Any
) -> None:
    key = claim(claims, 1001, at=T0)
    target = InMemoryTargetClient()
    manifests = S3ManifestStore(bucket, BUCKET)
    dispatch = dispatch_trigger(
        ledger,
        rules,
        manifests,
        {"webhook": target},
        DispatchPolicy(),
        clock=lambda: T0 + 1000,
        sleep=lambda s: None,
        metrics=None,
    )
    records = stream_records(ddb_client)
    wanted = [r for r in records if matches_any(r, DISPATCH_FILTER_PATTERNS)]
    assert [claimed_trigger_key(r) for r in wanted] == [key]  # rules, cursors, states do not pass
    results = [dispatch_record(r, dispatch) for r in wanted + wanted]  # and a redelivery
    assert [r.status for r in results if r] == [DispatchStatus.SUCCEEDED, DispatchStatus.DONE]
    assert target.runs[key] == 1
    trigger = claims.get(key)
    assert trigger is not None and trigger.status is TriggerStatus.SUCCEEDED and trigger.target_run_id == "run-1"
    assert trigger.manifest_uri == f"s3://{BUCKET}/manifests/{key}.json"
    assert manifests.get(trigger.manifest_uri).trigger_key == key
    # The ledger's own updates (lease, mark) are MODIFY records: they must not wake the dispatcher again.
    later = [r for r in stream_records(ddb_client)[len(records) :] if matches_any(r, DISPATCH_FILTER_PATTERNS)]
    assert later == []


def test_waiting_runs_are_started_claims_the_target_last_saw_waiting(
    claims: DynamoDBTriggerStore, ledger: DynamoDBTriggerLedger, rules: DynamoDBRuleStore, table: Any
) -> None:
    def started(snapshot: int, state: str | None, checked_at: int = T0) -> str:
        key = claim(claims, snapshot, at=T0)
        assert ledger.begin_attempt(key, "a", T0, LEASE) is not None
        run_state = None if state is None else RunState(state=state, detail="why", checked_at=checked_at)
        assert ledger.mark_succeeded(key, "a", f"run-{snapshot}", None, T0, run_state=run_state)
        return key

    queued, running = started(1, "queued"), started(2, "running")
    ended, unknown, recent = started(3, "success"), started(4, None), started(5, "queued", checked_at=T0 + 600_000)
    reported = started(6, "queued")
    table.update_item(
        Key=trigger_item_key(reported),
        UpdateExpression="SET runStatus = :s",
        ExpressionAttributeValues={":s": "SUCCESS"},
    )
    found = {e.trigger_key for e in ledger.waiting_runs(T0 + 300_000, limit=100)}
    assert found == {queued, running}
    assert not {ended, unknown, recent, reported} & found

    assert ledger.record_run_state(queued, RunState(state="success", checked_at=T0 + 300_000))
    assert {e.trigger_key for e in ledger.waiting_runs(T0 + 600_000, limit=100)} == {running}
    assert ledger.get(queued).trigger.run_state == RunState(state="success", checked_at=T0 + 300_000)  # type: ignore[union-attr]
    assert not ledger.record_run_state(reported, RunState(state="success", checked_at=T0))  # it reported its end
    failed = claim(claims, 7, at=T0)
    assert not ledger.record_run_state(failed, RunState(state="queued", checked_at=T0))  # no run started
