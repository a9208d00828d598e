"""A failure is visible and recoverable (issue 11), on moto (DynamoDB + S3) with a real HTTP webhook receiver.

Claims are made with the resolver's DynamoDBTriggerStore; the dispatcher is woken by the table's own
stream records, filtered by the dispatcher's FilterCriteria, as the DispatcherFunction is. The API
answers ``GET /triggers``, ``GET /triggers/{key}``, ``POST /triggers/{key}/retry`` and replay.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.trigger_ledger import DISPATCH_FILTER_PATTERNS, DynamoDBTriggerLedger
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.adapters.s3.manifest_store import S3ManifestStore
from lakehook.adapters.targets import TargetDeps, build_target_clients
from lakehook.api.app import LakehookResolver, build_app
from lakehook.container import Container
from lakehook.domain.dispatch import RetryPolicy, RunManifest
from lakehook.domain.rules import Rule
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.local.filters import matches_any
from lakehook.usecases.dispatch import DispatchPolicy, DispatchStatus, RedriveTriggers
from tests.conftest import ADMIN_TOKEN, BUCKET, TABLE
from tests.fakes.memory import InMemorySecretStore
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.hypothesis_profiles import examples
from tests.replay_choices import ANY_JSON, UNKNOWN_FIELDS
from tests.support import FakeLambdaContext, api_event
from tests.wiring import dispatch_record, dispatch_trigger

pytestmark = pytest.mark.integration

SECRET = "hook-signing-secret"
ASSET = "custom://erp/orders"
T0 = 1_750_000_000_000


@dataclass
class Answer:
    status: int
    body: Any


class Scene:
    """The table, the bucket, the rule, a receiver on loopback, a dispatcher on a clock the test moves."""

    def __init__(self, container: Container, receiver: WebhookReceiver, ddb_client: Any, total: int = 10) -> None:
        self.now = T0
        self.receiver = receiver
        self.ddb = ddb_client
        self.s3 = boto3.client("s3", region_name="us-east-1")
        self.s3.create_bucket(Bucket=BUCKET)
        self.claims = DynamoDBTriggerStore(container.table)
        self.ledger = DynamoDBTriggerLedger(container.table)
        self.rules = DynamoDBRuleStore(container.table)
        self.rules.put_rule(
            Rule.model_validate(
                {
                    "ruleId": "dwd",
                    "groups": [{"groupId": "g", "members": [{"assetKey": ASSET}]}],
                    "target": {
                        "type": "webhook",
                        "url": f"{receiver.base_url}/hooks/dwd",
                        "secretRef": "lakehook/targets/dwd",
                        "timeoutSeconds": 2,
                    },
                }
            ),
            T0,
        )
        secrets = InMemorySecretStore()
        secrets.put_secret("lakehook/targets/dwd", SECRET)
        deps = TargetDeps(secrets=secrets, aws=lambda service: None, allow_insecure_loopback=True)
        self.manifests = S3ManifestStore(self.s3, BUCKET)
        self.dispatch = dispatch_trigger(
            self.ledger,
            self.rules,
            self.manifests,
            build_target_clients(deps),
            DispatchPolicy(attempts=RetryPolicy(2, 0.5, 8.0), redrive=RetryPolicy(total, 30.0, 900.0)),
            clock=lambda: self.now,
            sleep=lambda seconds: self.advance(seconds),
            rand=lambda: 0.5,
            metrics=None,
        )
        self.redrive = RedriveTriggers(self.ledger, self.dispatch, clock=lambda: self.now)
        self.app: LakehookResolver = build_app()
        self.seen = 0
        self.cursor: GroupCursor | None = None

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1000)

    def claim(self, snapshot: int) -> str:
        pins = (PinnedInput(asset_key=ASSET, snapshot_id=snapshot),)
        key = trigger_key("dwd", "g", pins, None, 0)
        base = self.cursor or GroupCursor.initial("dwd", "g")
        trigger = Trigger(
            trigger_key=key,
            rule_id="dwd",
            group_id="g",
            inputs=pins,
            created_at=self.now,
            updated_at=self.now,
            sequence=base.seq + 1,
        )
        moved = base.after(trigger, {})
        assert self.claims.claim(trigger, moved, self.cursor).outcome.value == "CLAIMED"
        self.cursor = moved
        return key

    def deliver(self) -> list[Any]:
        """Hand the dispatcher every new stream record its FilterCriteria let through, as Lambda would."""
        records = stream_records(self.ddb)
        fresh, self.seen = records[self.seen :], len(records)
        wanted = [r for r in fresh if matches_any(r, DISPATCH_FILTER_PATTERNS)]
        return [dispatch_record(r, self.dispatch) for r in wanted]

    def call(self, method: str, path: str, query: dict[str, str] | None = None, body: Any = None) -> Answer:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
        answer = self.app.resolve(api_event(method, path, body, headers=headers, query=query), FakeLambdaContext())
        assert int(answer["statusCode"]) < 500, answer["body"]
        return Answer(int(answer["statusCode"]), json.loads(answer["body"]))

    def shown(self, key: str) -> dict[str, Any]:
        answer = self.call("GET", f"/triggers/{key}")
        assert answer.status == 200, answer.body
        return dict(answer.body)

    def manifest_stored(self, key: str) -> bool:
        listed = self.s3.list_objects_v2(Bucket=BUCKET, Prefix=f"manifests/{key}.json")
        return int(listed.get("KeyCount", 0)) == 1


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


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(SECRET, slow_seconds=0.6) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def scene(container: Container, receiver: WebhookReceiver, ddb_client: Any) -> Scene:
    return Scene(container, receiver, ddb_client)


def test_a_refused_trigger_is_final_with_its_manifest_and_retry_delivers_exactly_one_run(scene: Scene) -> None:
    scene.receiver.script = ["400"]  # "unknown pipeline": the receiver is misconfigured
    key = scene.claim(1001)
    [first] = scene.deliver()
    assert first is not None and first.status is DispatchStatus.FAILED
    shown = scene.shown(key)
    assert shown["status"] == "FAILED" and shown["failure"] == "FINAL" and shown["failureCode"] == "http_400"
    assert shown["reason"].startswith("HTTP 400") and shown["attempts"] == 1 and shown["nextAttemptAt"] is None
    assert shown["manifestUri"] == f"s3://{BUCKET}/manifests/{key}.json" and scene.manifest_stored(key)
    listed = scene.call("GET", "/triggers", query={"ruleId": "dwd"}).body["items"]
    assert [(t["triggerKey"], t["failure"]) for t in listed] == [(key, "FINAL")]
    # Nothing happens by itself: the compensator leaves a FINAL trigger alone.
    scene.advance(3600)
    assert scene.redrive().results == [] and scene.receiver.runs == {}

    # The receiver is fixed; someone retries the trigger.
    answer = scene.call("POST", f"/triggers/{key}/retry")
    assert answer.status == 202, answer.body
    assert answer.body["status"] == "TRIGGERING" and answer.body["retries"] == 1 and answer.body["failure"] is None
    [woken] = scene.deliver()  # the retry's own stream record wakes the dispatcher, and only that one
    assert woken is not None and woken.status is DispatchStatus.SUCCEEDED
    assert scene.receiver.runs == {key: 1}
    [payload] = scene.receiver.payloads
    assert payload["triggerKey"] == key and payload["attempt"] == 2
    assert payload["manifestUri"] == shown["manifestUri"]
    shown = scene.shown(key)
    assert shown["status"] == "SUCCEEDED" and shown["failure"] is None and shown["targetRunId"] == "wh-1"
    assert scene.deliver() == []  # marking it does not wake anything again

    again = scene.call("POST", f"/triggers/{key}/retry")
    assert again.status == 409 and "SUCCEEDED" in again.body["message"]
    assert scene.receiver.runs == {key: 1}


def test_retry_answers_404_for_an_unknown_key_and_409_while_triggering(scene: Scene) -> None:
    assert scene.call("POST", "/triggers/dwd.g.000000000000000000000000/retry").status == 404
    key = scene.claim(1001)
    busy = scene.call("POST", f"/triggers/{key}/retry")
    assert busy.status == 409 and busy.body["error"] == "CONFLICT" and "TRIGGERING" in busy.body["message"]


def test_a_5xx_is_retryable_with_its_next_attempt_then_final_when_the_budget_is_spent(
    container: Container, receiver: WebhookReceiver, ddb_client: Any
) -> None:
    scene = Scene(container, receiver, ddb_client, total=3)
    receiver.script = ["503"] * 100
    key = scene.claim(1001)
    [first] = scene.deliver()
    assert first is not None and first.status is DispatchStatus.RETRY_LATER
    shown = scene.shown(key)
    assert shown["status"] == "FAILED" and shown["failure"] == "RETRYABLE" and shown["failureCode"] == "http_503"
    assert shown["attempts"] == 2 and shown["nextAttemptAt"] is not None
    assert shown["nextAttemptAt"] > ms_to_iso(scene.now) and scene.manifest_stored(key)
    for _ in range(20):  # the compensator's passes
        scene.advance(1000)
        scene.redrive()
    shown = scene.shown(key)
    assert shown["failure"] == "FINAL" and shown["nextAttemptAt"] is None
    assert shown["reason"].startswith("gave up after 3 attempts: HTTP 503")
    assert receiver.runs == {}
    # Fixed, retried: one run.
    receiver.script = []
    assert scene.call("POST", f"/triggers/{key}/retry").status == 202
    scene.deliver()
    assert scene.shown(key)["status"] == "SUCCEEDED" and receiver.runs == {key: 1}


def test_a_failed_trigger_can_be_replayed_from_its_manifest(scene: Scene) -> None:
    scene.receiver.script = ["400"]
    key = scene.claim(1001)
    scene.deliver()
    assert scene.shown(key)["failure"] == "FINAL"
    answer = scene.call("POST", f"/triggers/{key}/replay")
    assert answer.status == 201, answer.body
    replay = answer.body["replay"]
    assert replay["replayOf"] == key and replay["manifestUri"] == f"s3://{BUCKET}/manifests/{key}.json"
    assert replay["failure"] is None and replay["retries"] == 0
    [result] = scene.deliver()
    assert result is not None and result.status is DispatchStatus.SUCCEEDED
    [payload] = scene.receiver.payloads
    assert payload["triggerKey"] == replay["triggerKey"] and payload["replayOf"] == key
    assert payload["inputs"] == [{"assetKey": ASSET, "snapshotId": 1001}]
    assert scene.shown(key)["status"] == "FAILED"  # the original stays what it was


def test_a_trigger_whose_dispatcher_died_after_the_manifest_can_be_replayed(scene: Scene) -> None:
    key = scene.claim(1001)
    trigger = scene.claims.get(key)
    assert trigger is not None
    scene.manifests.put_if_absent(key, RunManifest.for_trigger(trigger))  # then the dispatcher died
    assert scene.shown(key)["manifestUri"] is None and scene.shown(key)["status"] == TriggerStatus.TRIGGERING
    answer = scene.call("POST", f"/triggers/{key}/replay", query={"dryRun": "true"})
    assert answer.status == 200, answer.body
    never = scene.claim(1002)
    refused = scene.call("POST", f"/triggers/{never}/replay")
    assert refused.status == 409 and "no run manifest yet" in refused.body["message"]


# --- a replay's choices: dispatched, and the same on every attempt -----------------------------------------

CHOICES = {"startFrom": "load_dwd", "variables": {"full_refresh": True, "batch": 5000, "note": None}}


def test_a_replay_with_choices_dispatches_them_and_a_retried_dispatch_sends_the_same(scene: Scene) -> None:
    key = scene.claim(1001)
    scene.deliver()
    assert scene.shown(key)["status"] == "SUCCEEDED"
    answer = scene.call("POST", f"/triggers/{key}/replay", body=CHOICES)
    assert answer.status == 201, answer.body
    replay = answer.body["replay"]
    assert (replay["startFrom"], replay["variables"]) == (CHOICES["startFrom"], CHOICES["variables"])
    assert replay["replayEpoch"] == 1 and replay["triggerKey"] == trigger_key("dwd", "g", pinned(1001), None, 1)
    scene.receiver.script = ["503"]  # the first attempt fails: the dispatcher tries again
    [result] = scene.deliver()
    assert result is not None and result.status is DispatchStatus.SUCCEEDED, result
    sent = [r.json() for r in scene.receiver.requests if r.headers.get("idempotency-key") == replay["triggerKey"]]
    assert [p["attempt"] for p in sent] == [1, 2]
    assert all((p["startFrom"], p["variables"]) == (CHOICES["startFrom"], CHOICES["variables"]) for p in sent)
    shown = scene.shown(replay["triggerKey"])  # shown where the trigger is shown
    assert shown["status"] == "SUCCEEDED" and shown["variables"] == CHOICES["variables"]
    assert "startFrom" not in scene.shown(key)  # the original made no choices


def pinned(snapshot: int) -> tuple[PinnedInput, ...]:
    return (PinnedInput(asset_key=ASSET, snapshot_id=snapshot),)


def test_any_unknown_field_in_a_replay_is_a_400_naming_it_and_nothing_is_written(scene: Scene, ddb_client: Any) -> None:
    key = scene.claim(1001)
    scene.deliver()
    before = ddb_client.scan(TableName=TABLE)["Items"]

    @settings(max_examples=examples(25), deadline=None)
    @given(UNKNOWN_FIELDS, ANY_JSON, st.sampled_from([{}, {"startFrom": "load"}, {"variables": {"a": 1}}]))
    def refused(field: str, value: Any, valid: dict[str, Any]) -> None:
        answer = scene.call("POST", f"/triggers/{key}/replay", body={**valid, field: value})
        assert answer.status == 400, answer.body
        assert answer.body["field"] == field and repr(field) in answer.body["message"]

    refused()
    assert ddb_client.scan(TableName=TABLE)["Items"] == before  # no claim, no request record
