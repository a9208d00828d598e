"""The spool manifest model: its published JSON Schema, its own checksum, and what verification yields."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # (through openapi-spec-validator and cfn-lint)
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lakehook.domain.events import EventType
from lakehook.domain.spool import (
    ObjectProblem,
    Problem,
    SpoolManifest,
    SpoolVerification,
    VerificationStatus,
    seal_document,
    spool_manifest_json_schema,
)
from lakehook.wire.spool_format import canonical_json, manifest_checksum, parse_s3_uri
from tests.hypothesis_profiles import examples

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "spool-manifest.schema.json"
MANIFEST_URI = "s3://spool-bucket/orders/run-42.manifest.json"


def document(**changes: Any) -> dict[str, Any]:
    data = b"order_id\n1\n2\n"
    base: dict[str, Any] = {
        "formatVersion": 1,
        "assetKey": "s3://spool-bucket/orders",
        "snapshotId": 42,
        "rowCount": 2,
        "schema": {"schemaId": 3, "fields": [{"name": "order_id", "type": "long", "nullable": False}]},
        "objects": [
            {
                "uri": "s3://spool-bucket/orders/run-42/part-0.csv",
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "rowCount": 2,
            }
        ],
        "status": "SEALED",
        "createdAt": "2025-06-01T10:05:00.123Z",
        "writer": "extract-orders/run-42",
    }
    base.update(changes)
    return seal_document(base)


def test_the_published_json_schema_is_the_models() -> None:
    published = json.loads(SCHEMA_FILE.read_text())
    assert published == spool_manifest_json_schema(), (
        'docs/spool-manifest.schema.json is stale; regenerate it with: .venv/bin/python -c "import json; '
        "from lakehook.domain.spool import spool_manifest_json_schema as s; "
        "open('docs/spool-manifest.schema.json', 'w').write(json.dumps(s(), indent=2) + '\\n')\""
    )


def test_the_json_schema_accepts_a_sealed_manifest_and_refuses_a_broken_one() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    validator.validate(document())
    broken = document()
    broken["objects"][0]["sha256"] = "not-a-digest"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(broken)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**document(), "unexpected": 1})


def test_the_checksum_ignores_key_order_and_whitespace_but_not_content() -> None:
    doc = document()
    reordered = json.loads(json.dumps(dict(reversed(list(doc.items())))))
    spaced = json.loads(json.dumps(doc, indent=4))
    assert manifest_checksum(doc) == manifest_checksum(reordered) == manifest_checksum(spaced) == doc["sha256"]
    assert manifest_checksum({**doc, "rowCount": 3}) != doc["sha256"]
    assert manifest_checksum({**doc, "sha256": "0" * 64}) == doc["sha256"]  # the member itself is left out


def test_the_checksum_is_over_the_documented_canonical_bytes() -> None:
    doc = document(writer="ünïcode job")
    body = {k: v for k, v in doc.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))  # ensure_ascii is json.dumps' default
    assert '"writer":"\\u00fcn\\u00efcode job"}' in text  # non-ASCII escaped, no whitespace between tokens
    assert doc["sha256"] == hashlib.sha256(text.encode("ascii")).hexdigest()


@settings(max_examples=examples(100), deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_canonical_json_is_stable_under_a_round_trip(value: Any) -> None:
    assert canonical_json(json.loads(canonical_json(value))) == canonical_json(value)


def test_floats_have_no_canonical_form() -> None:
    with pytest.raises(ValueError, match="floating-point"):
        manifest_checksum({**document(), "rowCount": 2.0})


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"createdAt": "2025-06-01T10:05:00"}, "createdAt"),  # no zone
        ({"status": "DONE"}, "status"),
        ({"reason": "why not"}, None),  # a sealed manifest has no interruption reason
        ({"formatVersion": 2}, "formatVersion"),
        ({"extra": True}, "extra"),
        ({"assetKey": "not a key"}, "assetKey"),
    ],
)
def test_the_model_refuses_malformed_manifests(changes: dict[str, Any], field: str | None) -> None:
    with pytest.raises(ValidationError) as refused:
        SpoolManifest.model_validate(document(**changes))
    if field is not None:
        assert field in str(refused.value)


def test_an_object_listed_twice_is_refused() -> None:
    doc = document()
    doc["objects"] = doc["objects"] * 2
    with pytest.raises(ValidationError, match="listed twice"):
        SpoolManifest.model_validate(doc)


def test_created_at_is_kept_as_written_so_the_checksum_still_holds() -> None:
    manifest = SpoolManifest.model_validate(document(createdAt="2025-06-01T12:05:00.123+02:00"))
    assert manifest.created_at == "2025-06-01T12:05:00.123+02:00"
    assert manifest_checksum(manifest.to_document()) == manifest.sha256


def test_a_verified_manifest_becomes_a_sealed_event() -> None:
    manifest = SpoolManifest.model_validate(document())
    verification = SpoolVerification(MANIFEST_URI, VerificationStatus.VERIFIED, 1_748_772_300_000, manifest)
    event = verification.event()
    assert event is not None and event.event_type is EventType.MANIFEST_SEALED
    assert (event.asset_key, event.manifest_uri, event.snapshot_id) == ("s3://spool-bucket/orders", MANIFEST_URI, 42)
    assert event.total_record_count == 2 and event.schema_id == 3
    assert event.payload is not None and event.payload["manifestSha256"] == manifest.sha256


def test_an_interrupted_manifest_becomes_an_interrupted_event_with_its_reason() -> None:
    manifest = SpoolManifest.model_validate(document(status="INTERRUPTED", reason="source database went away"))
    verification = SpoolVerification(MANIFEST_URI, VerificationStatus.INTERRUPTED, 1, manifest)
    event = verification.event()
    assert event is not None and event.event_type is EventType.MANIFEST_INTERRUPTED
    assert verification.reason == "source database went away"
    assert event.payload is not None and event.payload["reason"] == "source database went away"


def test_an_invalid_manifest_yields_no_event_but_a_record_naming_the_object() -> None:
    manifest = SpoolManifest.model_validate(document())
    bad = manifest.objects[0].uri
    verification = SpoolVerification(
        MANIFEST_URI,
        VerificationStatus.INVALID,
        1,
        manifest,
        (ObjectProblem(bad, Problem.SHA256_MISMATCH, "the object's SHA-256 is 00, the manifest states ff"),),
    )
    assert verification.event() is None
    record = verification.to_record()
    assert record["status"] == "INVALID" and record["object"] == bad
    assert record["problems"][0]["problem"] == "SHA256_MISMATCH"
    assert record["assetKey"] == "s3://spool-bucket/orders"


def test_s3_uris() -> None:
    assert parse_s3_uri("s3://bucket/a/b c.json") == ("bucket", "a/b c.json")
    for bad in ("https://bucket/key", "s3://bucket", "s3:///key", "s3://bucket/"):
        with pytest.raises(ValueError):
            parse_s3_uri(bad)
