"""On a deployed stack a pushed MANIFEST_SEALED must name a manifest the spool verifier may read, or the push is a
400 naming the bucket and ``SpoolBucketArns`` (nothing recorded, nothing queued), through the ingest API's
handler on in-process moto: an operator's IAM push, a producer's signed push and a run's completion outlets."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from lakehook.adapters.secrets import SecretsManagerSecretStore
from lakehook.container import Container
from lakehook.domain.spool_buckets import SPOOL_BUCKETS_PARAMETER
from lakehook.settings import Settings
from tests.conftest import BUCKET, TABLE
from tests.integration.test_runs_api import KEY_SECRET, completion, completion_key, declare, make_claim, token_for
from tests.support import ROOT, FakeLambdaContext, load_handler, signed_headers

__all__ = ["completion_key"]  # fixture: the completion key secret on moto

SAMPLE = json.loads(Path(ROOT / "events" / "ingest_api" / "push_events_iam.json").read_text())
SPOOL = "s3://partner-spool/orders"


@pytest.fixture
def queue_url(aws: None) -> str:
    return str(boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="verify")["QueueUrl"])


@pytest.fixture
def settings(queue_url: str) -> Settings:
    return Settings(
        table_name=TABLE,
        bucket_name=BUCKET,
        admin_token=None,  # on AWS: IAM
        region="us-east-1",
        completion_key_secret=KEY_SECRET,
        spool_verify_queue_url=queue_url,
        warehouse_bucket_name="lakehook-warehouse",
        spool_bucket_arns="arn:aws:s3:::partner-spool,arn:aws:s3:::other-spool",
    )


def sealed(manifest_uri: str, snapshot_id: int = 7) -> dict[str, Any]:
    return {"eventType": "MANIFEST_SEALED", "assetKey": SPOOL, "snapshotId": snapshot_id, "manifestUri": manifest_uri}


def call(
    path: str, body: str, headers: dict[str, str] | None = None, identity: bool = True, method: str = "POST"
) -> tuple[int, Any]:
    """The IAM push sample's proxy event, sent to ``path``; ``identity=False``: a method without an authorizer."""
    event = copy.deepcopy(SAMPLE)
    event["httpMethod"] = event["requestContext"]["httpMethod"] = method
    event["headers"] = {"Content-Type": "application/json", **(headers or {})}
    event["multiValueHeaders"] = {k: [v] for k, v in event["headers"].items()}
    event["resource"] = event["path"] = event["requestContext"]["resourcePath"] = path
    event["body"] = body
    if not identity:
        for field in ("userArn", "caller", "user", "accessKey"):
            event["requestContext"]["identity"][field] = None
    answer = load_handler("ingest_api")(event, FakeLambdaContext())
    assert int(answer["statusCode"]) < 500, answer["body"]
    return int(answer["statusCode"]), json.loads(answer["body"])


def queued(queue_url: str) -> list[dict[str, Any]]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


def test_a_manifest_in_a_listed_bucket_is_accepted_and_queued_for_the_verifier(
    container: Container, queue_url: str
) -> None:
    status, body = call("/iam/asset-events", json.dumps(sealed("s3://partner-spool/orders/run-7.manifest.json")))
    assert status == 200 and [r["status"] for r in body["results"]] == ["ACCEPTED"], body
    assert [m["manifestUri"] for m in queued(queue_url)] == ["s3://partner-spool/orders/run-7.manifest.json"]


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("s3://elsewhere/orders/run-7.manifest.json", ["bucket 'elsewhere'", SPOOL_BUCKETS_PARAMETER]),
        (f"s3://{BUCKET}/manifests/run-7.manifest.json", [f"s3://{BUCKET}/spool/"]),
    ],
)
def test_a_manifest_the_verifier_may_not_read_is_a_400_naming_the_bucket_and_nothing_is_kept(
    container: Container, queue_url: str, uri: str, words: list[str]
) -> None:
    batch = {"events": [{"eventType": "SNAPSHOT_COMMITTED", "assetKey": SPOOL, "snapshotId": 6}, sealed(uri)]}
    status, body = call("/iam/asset-events", json.dumps(batch))
    assert status == 400, body
    assert body["field"] == "events[1].manifestUri" and all(w in body["message"] for w in words), body
    assert container.asset_store.get_state(SPOOL) is None  # the whole batch: not even the valid first event
    assert queued(queue_url) == []


def test_a_producers_signed_push_is_refused_alike(container: Container, queue_url: str) -> None:
    secret_store = SecretsManagerSecretStore(boto3.client("secretsmanager", region_name="us-east-1"))
    container.overrides["secret_store"] = secret_store
    status, body = call("/producers/spooler", json.dumps({"assetKeyPrefixes": ["s3://partner-spool/"]}), method="PUT")
    assert status == 201, body
    text = json.dumps(sealed("s3://elsewhere/run.manifest.json"))
    signed = signed_headers("spooler", body["secret"], text.encode())
    status, refused = call("/asset-events", text, headers=signed, identity=False)
    assert status == 400 and "'elsewhere'" in refused["message"], refused
    assert queued(queue_url) == []


def test_a_run_completion_whose_outlet_names_an_unreadable_manifest_is_a_400_recording_nothing(
    container: Container, table: Any, queue_url: str
) -> None:
    claim = make_claim(table)
    declare(container, ["s3://partner-spool/"])
    text = completion([sealed("s3://elsewhere/run.manifest.json")])
    status, body = call(f"/runs/{claim}/complete", text, headers=token_for(claim), identity=False)
    assert status == 400 and body["field"] == "outlets[0].manifestUri" and SPOOL_BUCKETS_PARAMETER in body["message"]
    assert container.trigger_ledger.get(claim).run_status is None  # type: ignore[union-attr]
    assert queued(queue_url) == []
