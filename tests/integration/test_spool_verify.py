"""Spool manifests on S3 (moto): the helper seals, lakehook verifies, and every kind of damage is refused."""

from __future__ import annotations

import hashlib
import io
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.s3.object_store import S3ObjectStore
from lakehook.client.spool import SpoolWriteError, SpoolWriter
from lakehook.domain.events import EventType, SourceType
from lakehook.domain.spool import Problem, VerificationStatus
from lakehook.domain.spool_buckets import SPOOL_BUCKETS_PARAMETER, ReadableSpool
from lakehook.usecases.manifests import RecordManifestVerification
from lakehook.usecases.spool import VerifySpoolManifest, manifest_uris
from tests.fakes.memory import InMemoryWorkQueue
from tests.wiring import ingest_events

BUCKET = "spool-bucket"
ASSET = "s3://spool-bucket/orders"
FIELDS: list[dict[str, Any]] = [
    {"name": "order_id", "type": "long", "nullable": False},
    {"name": "amount", "type": "decimal(10,2)"},
]


@pytest.fixture
def s3(aws: None) -> Any:
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


@pytest.fixture
def verifier(s3: Any) -> VerifySpoolManifest:
    return VerifySpoolManifest(S3ObjectStore(s3, chunk_size=64 * 1024), clock=lambda: 1_748_772_300_000)


def uri(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


def spool(s3: Any, run: str, tmp_path: Path) -> SpoolWriter:
    """A sealed spool of three objects, one written each way the helper offers."""
    path = tmp_path / f"{run}-part-0.csv"
    path.write_bytes(b"order_id,amount\n" + b"".join(b"%d,1.00\n" % i for i in range(1000)))
    with SpoolWriter(
        s3,
        manifest_uri=uri(f"orders/{run}.manifest.json"),
        asset_key=ASSET,
        snapshot_id=42,
        fields=FIELDS,
        schema_id=3,
        writer=f"extract-orders/{run}",
    ) as writer:
        writer.upload_file(path, uri(f"orders/{run}/part-0.csv"), row_count=1000)
        writer.upload_bytes(b"order_id,amount\n1000,2.00\n", uri(f"orders/{run}/part-1.csv"), row_count=1)
        writer.upload_stream(
            io.BytesIO(b"order_id,amount\n" + b"1001,3.00\n" * 5), uri(f"orders/{run}/part 2.csv"), row_count=5
        )
    return writer


def test_a_manifest_sealed_by_the_helper_verifies(s3: Any, verifier: VerifySpoolManifest, tmp_path: Path) -> None:
    writer = spool(s3, "run-42", tmp_path)
    result = verifier.verify(writer.manifest_uri)
    assert result.status is VerificationStatus.VERIFIED, result.to_record()
    assert result.manifest is not None and result.manifest.row_count == 1006
    event = result.event()
    assert event is not None and event.event_type is EventType.MANIFEST_SEALED
    assert (event.asset_key, event.manifest_uri, event.snapshot_id) == (ASSET, writer.manifest_uri, 42)


@pytest.mark.parametrize(
    ("damage", "problem", "words"),
    [
        ("tamper", Problem.SHA256_MISMATCH, "SHA-256"),
        ("truncate", Problem.SIZE_MISMATCH, "truncated"),
        ("delete", Problem.OBJECT_MISSING, "does not exist"),
    ],
)
def test_a_damaged_object_is_refused_with_the_object_and_the_reason(
    s3: Any, verifier: VerifySpoolManifest, tmp_path: Path, damage: str, problem: Problem, words: str
) -> None:
    writer = spool(s3, "run-43", tmp_path)
    key = "orders/run-43/part-0.csv"
    original = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    if damage == "tamper":  # same size, one byte changed
        s3.put_object(Bucket=BUCKET, Key=key, Body=original[:-2] + b"9\n")
    elif damage == "truncate":
        s3.put_object(Bucket=BUCKET, Key=key, Body=original[: len(original) // 2])
    else:
        s3.delete_object(Bucket=BUCKET, Key=key)
    result = verifier.verify(writer.manifest_uri)
    assert result.status is VerificationStatus.INVALID
    assert result.object_uri == uri(key)
    assert result.problems[0].problem is problem
    assert result.reason is not None and words in result.reason
    assert result.event() is None
    assert result.to_record()["object"] == uri(key)


def test_every_missing_object_is_named_before_anything_is_hashed(
    s3: Any, verifier: VerifySpoolManifest, tmp_path: Path
) -> None:
    writer = spool(s3, "run-44", tmp_path)
    s3.delete_object(Bucket=BUCKET, Key="orders/run-44/part-0.csv")
    s3.delete_object(Bucket=BUCKET, Key="orders/run-44/part 2.csv")
    result = verifier.verify(writer.manifest_uri)
    assert [p.uri for p in result.problems] == [uri("orders/run-44/part-0.csv"), uri("orders/run-44/part 2.csv")]


def test_a_manifest_changed_after_sealing_is_refused(s3: Any, verifier: VerifySpoolManifest, tmp_path: Path) -> None:
    writer = spool(s3, "run-45", tmp_path)
    bucket, key = BUCKET, "orders/run-45.manifest.json"
    document = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    document["rowCount"] = 2000
    document["objects"][0]["rowCount"] = 1994  # the counts still add up: only the checksum notices
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(document).encode())
    result = verifier.verify(writer.manifest_uri)
    assert result.status is VerificationStatus.INVALID
    assert result.problems[0].problem is Problem.MANIFEST_CHECKSUM
    assert result.object_uri == writer.manifest_uri


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (None, Problem.MANIFEST_MISSING),
        (b"{not json", Problem.MANIFEST_UNREADABLE),
        (b'{"formatVersion": 1}', Problem.MANIFEST_UNREADABLE),
        (b"[]", Problem.MANIFEST_UNREADABLE),
    ],
)
def test_a_missing_or_unreadable_manifest_is_invalid(
    s3: Any, verifier: VerifySpoolManifest, body: bytes | None, problem: Problem
) -> None:
    if body is not None:
        s3.put_object(Bucket=BUCKET, Key="orders/bad.manifest.json", Body=body)
    result = verifier.verify(uri("orders/bad.manifest.json"))
    assert result.status is VerificationStatus.INVALID
    assert result.problems[0].problem is problem


def test_a_manifest_of_another_asset_is_refused_for_an_event_naming_this_one(
    s3: Any, verifier: VerifySpoolManifest, tmp_path: Path
) -> None:
    writer = spool(s3, "run-46", tmp_path)
    result = verifier.verify(writer.manifest_uri, expected_asset_key="s3://spool-bucket/payments")
    assert result.problems[0].problem is Problem.ASSET_MISMATCH


def test_an_interrupted_extract_writes_an_interrupted_manifest_that_blocks(
    s3: Any, verifier: VerifySpoolManifest, table: Any
) -> None:
    store = DynamoDBAssetStore(table)
    recorder = RecordManifestVerification(store, verifier)
    # GIVEN an extract that fails after spooling one object
    with (
        pytest.raises(ConnectionError),
        SpoolWriter(
            s3, manifest_uri=uri("orders/run-47.manifest.json"), asset_key=ASSET, snapshot_id=47, fields=FIELDS
        ) as writer,
    ):
        writer.upload_bytes(b"order_id,amount\n1,1.00\n", uri("orders/run-47/part-0.csv"), row_count=1)
        raise ConnectionError("source database went away")
    assert writer.status == "INTERRUPTED"
    # THEN the manifest verifies as INTERRUPTED, with the job's error as the reason
    result = verifier.verify(writer.manifest_uri)
    assert result.status is VerificationStatus.INTERRUPTED
    assert result.reason is not None and "source database went away" in result.reason
    event = result.event()
    assert event is not None and event.event_type is EventType.MANIFEST_INTERRUPTED
    recorder.verify(writer.manifest_uri)
    state = store.get_state(ASSET)
    assert state is not None and state.manifest_status == "INTERRUPTED"
    # WHEN the extract is re-staged from scratch and sealed under a new manifest
    with SpoolWriter(
        s3, manifest_uri=uri("orders/run-48.manifest.json"), asset_key=ASSET, snapshot_id=48, fields=FIELDS
    ) as retry:
        retry.upload_bytes(b"order_id,amount\n1,1.00\n2,2.00\n", uri("orders/run-48/part-0.csv"), row_count=2)
    assert recorder.verify(retry.manifest_uri).status is VerificationStatus.VERIFIED
    # THEN the sealed manifest replaces the interrupted one
    state = store.get_state(ASSET)
    assert state is not None and (state.manifest_status, state.manifest_uri) == ("SEALED", retry.manifest_uri)


def test_the_helper_refuses_what_it_cannot_seal_truthfully(s3: Any) -> None:
    with pytest.raises(SpoolWriteError, match=r"\.manifest\.json"):
        SpoolWriter(s3, manifest_uri=uri("orders/run.json"), asset_key=ASSET, snapshot_id=1, fields=FIELDS)
    writer = SpoolWriter(
        s3, manifest_uri=uri("orders/run-49.manifest.json"), asset_key=ASSET, snapshot_id=1, fields=FIELDS
    )
    writer.upload_bytes(b"x", uri("orders/run-49/part-0"))
    with pytest.raises(SpoolWriteError, match="row count"):
        writer.seal()  # no row count anywhere: it will not invent one
    writer.seal(row_count=1)
    with pytest.raises(SpoolWriteError, match="already SEALED"):
        writer.upload_bytes(b"y", uri("orders/run-49/part-1"))


def notification(*records: tuple[str, str, str]) -> dict[str, Any]:
    """An S3 event notification as S3 sends it to Lambda (keys URL-encoded, spaces as '+')."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": "2025-06-01T10:05:00.000Z",
                "eventName": name,
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "spool-manifests",
                    "bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
                    "object": {"key": key, "size": 1, "eTag": "0", "sequencer": "0A1B2C3D4E5F678901"},
                },
            }
            for name, bucket, key in records
        ]
    }


def test_an_s3_notification_verifies_and_ingests_each_new_manifest(
    s3: Any, verifier: VerifySpoolManifest, table: Any, tmp_path: Path
) -> None:
    with SpoolWriter(
        s3, manifest_uri=uri("orders/run 50.manifest.json"), asset_key=ASSET, snapshot_id=50, fields=FIELDS
    ) as writer:
        writer.upload_bytes(b"order_id,amount\n", uri("orders/run-50/part-0.csv"), row_count=0)
    event = notification(
        ("ObjectCreated:Put", BUCKET, "orders/run+50.manifest.json"),
        ("ObjectCreated:Put", BUCKET, "orders/run+50.manifest.json"),  # a repeat in the same batch
        ("ObjectRemoved:Delete", BUCKET, "orders/run-1.manifest.json"),
        ("ObjectCreated:Put", BUCKET, "orders/run-50/part-0.csv"),  # not a manifest
    )
    assert manifest_uris(event) == [writer.manifest_uri]
    store = DynamoDBAssetStore(table)
    results = RecordManifestVerification(store, verifier).from_notification(event)
    assert [r.status for r in results] == [VerificationStatus.VERIFIED]
    state = store.get_state(ASSET)
    assert state is not None and state.manifest_status == "SEALED" and state.manifest_snapshot_id == 50


def test_objects_are_streamed_in_bounded_chunks(s3: Any) -> None:
    # GIVEN a 48 MiB object and a store that reads 1 MiB at a time
    size, chunk = 48 * 1024 * 1024, 1024 * 1024
    data = hashlib.sha256(b"seed").digest() * (size // 32)
    s3.put_object(Bucket=BUCKET, Key="big/object.bin", Body=data)
    expected = hashlib.sha256(data).hexdigest()
    del data
    store = S3ObjectStore(s3, chunk_size=chunk)
    # WHEN it is streamed (the first chunk opens the GET; moto hands the body over in memory)
    chunks: Iterator[bytes] = store.chunks(uri("big/object.bin"))
    first = next(chunks)
    hasher, sizes = hashlib.sha256(first), [len(first)]
    tracemalloc.start()
    try:
        for piece in chunks:
            hasher.update(piece)
            sizes.append(len(piece))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # THEN no chunk is larger than asked, and reading the rest never held more than a few chunks
    assert max(sizes) == chunk and len(sizes) == size // chunk
    assert peak < 4 * chunk, f"streaming held {peak} bytes at once"
    assert hasher.hexdigest() == expected
    assert store.digest(uri("big/object.bin")).sha256 == expected


def test_a_pushed_seal_counts_only_once_verified(
    s3: Any, verifier: VerifySpoolManifest, table: Any, tmp_path: Path
) -> None:
    store = DynamoDBAssetStore(table)
    queue = InMemoryWorkQueue()
    ingest = ingest_events(store, verifications=queue)
    writer = spool(s3, "run-60", tmp_path)
    pushed = {"eventType": "MANIFEST_SEALED", "assetKey": ASSET, "manifestUri": writer.manifest_uri, "snapshotId": 42}
    # WHEN a writer pushes that it sealed a manifest
    [result] = ingest.ingest_raw([pushed], SourceType.PUSH)
    # THEN the event is evidence, the state waits for verification, and the verifier is asked
    state = store.get_state(ASSET)
    assert result.status.value == "ACCEPTED"
    assert state is not None and (state.manifest_status, state.manifest_uri) == ("PENDING", writer.manifest_uri)
    assert queue.messages == [{"manifestUri": writer.manifest_uri, "assetKey": ASSET}]
    # WHEN the verifier takes the request (twice: SQS delivers at least once)
    recorder = RecordManifestVerification(store, verifier)
    for message in [*queue.messages, *queue.messages]:
        assert recorder.from_request(message).status is VerificationStatus.VERIFIED
    state = store.get_state(ASSET)
    assert state is not None and (state.manifest_status, state.manifest_snapshot_id) == ("SEALED", 42)
    # a redelivered push neither re-opens the verified manifest nor loses it
    ingest.ingest_raw([pushed], SourceType.PUSH)
    again = store.get_state(ASSET)
    assert again is not None and again.manifest_status == "SEALED"


def test_a_tampered_pushed_manifest_is_recorded_invalid_with_the_object_and_reason(
    s3: Any, verifier: VerifySpoolManifest, table: Any, tmp_path: Path
) -> None:
    store = DynamoDBAssetStore(table)
    writer = spool(s3, "run-61", tmp_path)
    s3.put_object(Bucket=BUCKET, Key="orders/run-61/part-1.csv", Body=b"order_id,amount\n1000,9.99\n")
    ingest_events(store).ingest_raw(
        [{"eventType": "MANIFEST_SEALED", "assetKey": ASSET, "manifestUri": writer.manifest_uri}], SourceType.PUSH
    )
    result = RecordManifestVerification(store, verifier).verify(writer.manifest_uri, ASSET)
    assert result.status is VerificationStatus.INVALID
    state = store.get_state(ASSET)
    assert state is not None and state.manifest_status == "INVALID"
    assert state.manifest_object == uri("orders/run-61/part-1.csv")
    assert state.manifest_reason is not None and "SHA-256" in state.manifest_reason


def test_an_object_in_a_bucket_the_verifier_may_not_read_is_invalid_naming_the_bucket_and_is_never_read(
    s3: Any,
) -> None:
    s3.create_bucket(Bucket="elsewhere")
    with SpoolWriter(
        s3, manifest_uri=uri("orders/run-51.manifest.json"), asset_key=ASSET, snapshot_id=51, fields=FIELDS
    ) as writer:
        writer.upload_bytes(b"order_id,amount\n1,1.00\n", uri("orders/run-51/part-0.csv"), row_count=1)
        writer.upload_bytes(b"order_id,amount\n2,1.00\n", "s3://elsewhere/orders/part-1.csv", row_count=1)
    reads: list[str] = []
    s3.meta.events.register("before-call.s3.*", lambda params, model, **_: reads.append(params.get("Bucket", "")))
    readable = ReadableSpool.of("lakehook-stack-manifests", None, f"arn:aws:s3:::{BUCKET}")
    verifier = VerifySpoolManifest(S3ObjectStore(s3), readable=readable)

    result = verifier.verify(writer.manifest_uri)

    assert result.status is VerificationStatus.INVALID
    (problem,) = result.problems
    assert (problem.uri, problem.problem) == ("s3://elsewhere/orders/part-1.csv", Problem.OBJECT_UNREADABLE)
    assert "'elsewhere'" in problem.detail and SPOOL_BUCKETS_PARAMETER in problem.detail
    assert "elsewhere" not in reads  # denied on every try: not asked for, not retried
    # the same manifest verifies for a verifier that may read both buckets
    both = ReadableSpool.of("lakehook-stack-manifests", "elsewhere", f"arn:aws:s3:::{BUCKET}")
    assert VerifySpoolManifest(S3ObjectStore(s3), readable=both).verify(writer.manifest_uri).status is (
        VerificationStatus.VERIFIED
    )
