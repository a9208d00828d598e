"""The wire forms whose builders left the domain's ``to_api`` methods keep their bytes: an event as pushed, stored
and answered (its interval in ISO 8601, its partitions without unrecorded counts unless some key was not
recorded), a run's manifest (and its
sha256) and invocation payload (inputs with their events' details, the window in ISO 8601), a spool verification's
record (each problem's object and reason), and the QUALITY_CHECK_* event a Glue Data Quality verdict is recorded
as (its result under ``glueDataQuality``, the score only when Glue gave one). Each expected text was captured from
the code before the move; a run's payload is a documented contract and a manifest's hash is stored with it."""

from __future__ import annotations

import json

from lakehook.domain.dispatch import Invocation, RunManifest
from lakehook.domain.events import AssetEvent, event_json
from lakehook.domain.glue_quality import GlueQualityResult, Pinned
from lakehook.domain.input_details import InputDetails
from lakehook.domain.partitions import TouchedPartitions, partitions_json
from lakehook.domain.spool import ObjectProblem, Problem, SpoolVerification, VerificationStatus
from lakehook.domain.triggers import PinnedInput, Trigger, Window
from lakehook.usecases.glue_quality import verdict_event

T0 = 1_725_963_330_123  # 2024-09-10T10:15:30.123Z
A, B = "iceberg://glue/db/orders", "paimon://lake/ods/payments"


def manifest_and_invocation() -> tuple[RunManifest, Invocation]:
    trigger = Trigger(
        trigger_key="tk-ü",
        rule_id="r",
        group_id="g",
        inputs=(
            PinnedInput(
                asset_key=A, snapshot_id=1001, schema_id=5, commit_time=T0 - 30_000, metadata_location="s3://m/v3.json"
            ),
            PinnedInput(asset_key=B, snapshot_id=77, watermark=T0 - 3_600_000),
        ),
        window=Window(start=T0 - 3_600_123, end=T0 - 123),
        partition="dt=2024-09-10",
        created_at=T0,
        updated_at=T0,
        start_from="load",
        variables={"mode": "full", "n": 2, "none": None},
    )
    details = InputDetails(
        commit_kind="APPEND",
        data_changed=True,
        total_record_count=10,
        partitions={"keys": ["dt=2024-09-10"], "count": 1, "truncated": False},
        payload={"writer": "spark", "note": None, "ünï": [1, 2.5]},
    )
    manifest = RunManifest.for_trigger(trigger, details=[details, None])
    invocation = Invocation.of(trigger, manifest, "s3://manifests/tk.json", attempt=2, completion_token="secret")
    return manifest, invocation


def verification() -> SpoolVerification:
    return SpoolVerification(
        "s3://spool/orders/m.manifest.json",
        VerificationStatus.INVALID,
        T0,
        None,
        (
            ObjectProblem("s3://spool/orders/a.parquet", Problem.SIZE_MISMATCH, "10 bytes, the manifest states 12"),
            ObjectProblem("s3://spool/orders/b.parquet", Problem.SHA256_MISMATCH, "the object's SHA-256 is 00"),
        ),
    )


def glue_verdict(score: float | None) -> tuple[GlueQualityResult, Pinned]:
    result = GlueQualityResult(
        result_id="dqresult-1",
        database="db",
        table="orders",
        catalog_id="123456789012",
        region="eu-west-1",
        ruleset_names=("orders_ruleset", "more"),
        state="FAILED",
        score=score,
        rules_succeeded=97,
        rules_failed=3,
        rules_skipped=1,
        available_at=T0,
    )
    snapshot = AssetEvent.model_validate(
        {
            "eventType": "SNAPSHOT_COMMITTED",
            "assetKey": A,
            "snapshotId": 72,
            "sequenceNumber": 2,
            "commitTime": 1_796_630_340_000,
        }
    )
    return result, Pinned(snapshot, "pinned to snapshot 72, the newest committed at or before the evaluation's start")


MANIFEST = (
    '{"createdAt":"2024-09-10T10:15:30.123Z","groupId":"g","inputs":[{"assetKey":"iceberg://glue/db/order'
    's","commitKind":"APPEND","commitTime":1725963300123,"dataChanged":true,"interval":{"end":"2024-09-10'
    'T10:15:30Z","start":"2024-09-10T09:15:30Z"},"metadataLocation":"s3://m/v3.json","partitions":{"count'
    '":1,"keys":["dt=2024-09-10"],"truncated":false},"payload":{"note":null,"writer":"spark","ünï":[1,2.5'
    ']},"schemaId":5,"snapshotId":1001,"totalRecordCount":10},{"assetKey":"paimon://lake/ods/payments","i'
    'nterval":{"end":"2024-09-10T10:15:30Z","start":"2024-09-10T09:15:30Z"},"snapshotId":77,"watermark":1'
    '725959730123}],"manifestVersion":1,"partition":"dt=2024-09-10","replayEpoch":0,"ruleId":"r","sha256"'
    ':"f9b487864cb48c827e1474cf2cadb99b597f719af77cf091de67280fac3e565c","triggerKey":"tk-ü","window":{"e'
    'nd":"2024-09-10T10:15:30Z","start":"2024-09-10T09:15:30Z"}}'
)
PAYLOAD = (
    '{"attempt":2,"completionPath":"/runs/tk-ü/complete","completionToken":"secret","groupId":"g","inputs'
    '":[{"assetKey":"iceberg://glue/db/orders","commitKind":"APPEND","commitTime":1725963300123,"dataChan'
    'ged":true,"interval":{"end":"2024-09-10T10:15:30Z","start":"2024-09-10T09:15:30Z"},"metadataLocation'
    '":"s3://m/v3.json","partitions":{"count":1,"keys":["dt=2024-09-10"],"truncated":false},"payload":{"n'
    'ote":null,"writer":"spark","ünï":[1,2.5]},"schemaId":5,"snapshotId":1001,"totalRecordCount":10},{"as'
    'setKey":"paimon://lake/ods/payments","interval":{"end":"2024-09-10T10:15:30Z","start":"2024-09-10T09'
    ':15:30Z"},"snapshotId":77,"watermark":1725959730123}],"manifestUri":"s3://manifests/tk.json","partit'
    'ion":"dt=2024-09-10","replayOf":null,"ruleId":"r","startFrom":"load","triggerKey":"tk-ü","variables"'
    ':{"mode":"full","n":2,"none":null},"window":{"end":"2024-09-10T10:15:30Z","start":"2024-09-10T09:15:'
    '30Z"}}'
)
RECORD = (
    '{"manifestUri":"s3://spool/orders/m.manifest.json","status":"INVALID","checkedAt":"2024-09-10T10:15:'
    '30.123Z","object":"s3://spool/orders/a.parquet","reason":"10 bytes, the manifest states 12","problem'
    's":[{"object":"s3://spool/orders/a.parquet","problem":"SIZE_MISMATCH","reason":"10 bytes, the manife'
    'st states 12"},{"object":"s3://spool/orders/b.parquet","problem":"SHA256_MISMATCH","reason":"the obj'
    "ect's SHA-256 is 00\"}]}"
)
GLUE_EVENT = (
    '{"eventType":"QUALITY_CHECK_FAILED","assetKey":"iceberg://glue/db/orders","snapshotId":72,"payload":'
    '{"glueDataQuality":{"resultId":"dqresult-1","table":"db.orders","catalogId":"123456789012","rulesetN'
    'ames":["orders_ruleset","more"],"state":"FAILED","rulesSucceeded":97,"rulesFailed":3,"rulesSkipped":'
    '1,"score":0.97,"pinned":"pinned to snapshot 72, the newest committed at or before the evaluation\'s s'
    'tart"}},"sequenceNumber":2,"commitTime":1796630340000}'
)
GLUE_EVENT_WITHOUT_SCORE = (
    '{"eventType":"QUALITY_CHECK_FAILED","assetKey":"iceberg://glue/db/orders","snapshotId":72,"payload":'
    '{"glueDataQuality":{"resultId":"dqresult-1","table":"db.orders","catalogId":"123456789012","rulesetN'
    'ames":["orders_ruleset","more"],"state":"FAILED","rulesSucceeded":97,"rulesFailed":3,"rulesSkipped":'
    '1,"pinned":"pinned to snapshot 72, the newest committed at or before the evaluation\'s start"}},"sequ'
    'enceNumber":2,"commitTime":1796630340000}'
)


def test_the_manifest_document_and_the_payload_are_the_bytes_they_were() -> None:
    manifest, invocation = manifest_and_invocation()
    assert manifest.document().decode() == MANIFEST
    assert invocation.body().decode() == PAYLOAD


def test_a_verification_record_names_each_problem_as_it_did() -> None:
    assert json.dumps(verification().to_record(), separators=(",", ":"), ensure_ascii=False) == RECORD


def test_a_glue_verdict_event_is_the_event_it_was() -> None:
    for score, expected in ((0.97, GLUE_EVENT), (None, GLUE_EVENT_WITHOUT_SCORE)):
        result, pinned = glue_verdict(score)
        event = verdict_event(A, result, pinned)
        assert json.dumps(event, separators=(",", ":"), ensure_ascii=False) == expected


def events() -> list[AssetEvent]:
    return [
        AssetEvent.model_validate(
            {
                "eventType": "SNAPSHOT_COMMITTED",
                "assetKey": "iceberg://glue/db/orders",
                "snapshotId": 9,
                "sequenceNumber": 4,
                "commitTime": "2025-06-01T10:05:00.250Z",
                "partitions": ["dt=2025-06-01/region=eu", "dt=2025-06-01/region=ap"],
                "payload": {"writer": "spark", "rows": 12, "none": None, "ünï": [1.5, True]},
            }
        ),
        AssetEvent.model_validate(
            {
                "eventType": "INTERVAL_COVERED",
                "assetKey": "s3://spool/orders",
                "interval": {"start": "2025-06-01T10:05:00Z", "end": 1_748_772_600_001},
                "partitionKey": "dt=2025-06-01",
            }
        ),
    ]


def unrecorded() -> TouchedPartitions:
    return TouchedPartitions(
        keys=("dt=2025-06-01",),
        count=1,
        truncated=False,
        unrecorded=2,
        unrecorded_keys=("dt=x… (300 characters): longer than 256", "dt=\\udcff: not valid text"),
    )


EVENTS = [
    (
        '{"eventType":"SNAPSHOT_COMMITTED","assetKey":"iceberg://glue/db/orders","snapshotId":9,"sequenceNumb'
        'er":4,"commitTime":1748772300250,"payload":{"writer":"spark","rows":12,"none":null,"\\u00fcn\\u00ef":['
        '1.5,true]},"partitions":{"keys":["dt=2025-06-01/region=ap","dt=2025-06-01/region=eu"],"count":2,"tru'
        'ncated":false}}'
    ),
    (
        '{"eventType":"INTERVAL_COVERED","assetKey":"s3://spool/orders","partitionKey":"dt=2025-06-01","inter'
        'val":{"start":"2025-06-01T10:05:00Z","end":"2025-06-01T10:10:00.001Z"}}'
    ),
]
UNRECORDED = (
    '{"keys":["dt=2025-06-01"],"count":1,"truncated":false,"unrecorded":2,"unrecordedKeys":["dt=x\\u2026 ('
    '300 characters): longer than 256","dt=\\\\udcff: not valid text"]}'
)


def test_an_event_is_written_and_answered_as_it_was() -> None:
    assert [json.dumps(event_json(e), separators=(",", ":")) for e in events()] == EVENTS


def test_partitions_name_their_unrecorded_keys_only_when_there_are_some() -> None:
    assert json.dumps(partitions_json(unrecorded()), separators=(",", ":")) == UNRECORDED
    every_key_recorded = events()[0].partitions
    assert every_key_recorded is not None and "unrecorded" not in partitions_json(every_key_recorded)
