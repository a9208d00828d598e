"""The AssetEvent model: the API's camelCase shape, validation that names the field, and identity."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError as PydanticValidationError

from lakehook.api.answers import EventResult as EventResultAnswer
from lakehook.domain.events import (
    VERSION_FIELDS,
    AssetEvent,
    EventResult,
    EventType,
    IngestStatus,
    event_identity,
    event_json,
)
from lakehook.domain.limits import MAX_LONG, MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH, MIN_LONG
from lakehook.domain.time import MAX_ISO_MS, ms_to_iso, parse_instant_ms

ORDERS = "paimon://lake/ods_db/ods_order_latest"

# One valid event of every type: the field that carries its version, in the API's spelling.
VERSION_VALUES: dict[EventType, dict[str, Any]] = {
    EventType.SNAPSHOT_COMMITTED: {"snapshotId": 1001},
    EventType.WATERMARK_ADVANCED: {"watermark": 1725963330123},
    EventType.TAG_CREATED: {"tag": "2025-06-01"},
    EventType.QUALITY_CHECK_PASSED: {"snapshotId": 1001},
    EventType.QUALITY_CHECK_FAILED: {"snapshotId": 1001},
    EventType.SCHEMA_CHANGE_APPROVED: {"schemaId": 6},
    EventType.SCHEMA_CHANGE_REJECTED: {"schemaId": 6},
    EventType.BACKFILL_STARTED: {"backfillId": "bf-1"},
    EventType.BACKFILL_COMPLETED: {"backfillId": "bf-1"},
    EventType.CDC_LAG_RECOVERED: {"watermark": 1725963330123},
    EventType.MANIFEST_SEALED: {"manifestUri": "s3://spool/orders/_manifest.json"},
    EventType.MANIFEST_INTERRUPTED: {"manifestUri": "s3://spool/orders/_manifest.json"},
    EventType.INTERVAL_COVERED: {"interval": {"start": "2025-06-01T10:05:00Z", "end": "2025-06-01T10:10:00Z"}},
}


def event(**body: Any) -> AssetEvent:
    return AssetEvent.model_validate({"assetKey": ORDERS, **body})


def complaint(body: dict[str, Any]) -> tuple[str, str]:
    """(location, message) of the single error the body has."""
    with pytest.raises(PydanticValidationError) as raised:
        AssetEvent.model_validate(body)
    (error,) = raised.value.errors()
    return ".".join(str(p) for p in error["loc"]), error["msg"]


def nested(depth: int) -> dict[str, Any]:
    """A payload object nesting ``depth`` levels (itself the first)."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_every_event_type_has_an_example() -> None:
    assert set(VERSION_VALUES) == set(EventType) == set(VERSION_FIELDS)


def test_the_design_contract_example_parses() -> None:
    snapshot = event(
        eventType="SNAPSHOT_COMMITTED", snapshotId=1001, schemaId=5, commitKind="APPEND", commitTime=1725963330123
    )
    quality = event(eventType="QUALITY_CHECK_PASSED", snapshotId=1001)
    interval = AssetEvent.model_validate(
        {
            "eventType": "INTERVAL_COVERED",
            "assetKey": "s3://spool/orders",
            "interval": {"start": "2025-06-01T10:05:00Z", "end": "2025-06-01T10:10:00Z"},
        }
    )
    assert (snapshot.snapshot_id, snapshot.schema_id, snapshot.commit_time) == (1001, 5, 1725963330123)
    assert quality.event_type is EventType.QUALITY_CHECK_PASSED
    assert interval.interval is not None
    assert interval.interval.end - interval.interval.start == 5 * 60 * 1000
    assert event_json(interval)["interval"] == {"start": "2025-06-01T10:05:00Z", "end": "2025-06-01T10:10:00Z"}


@pytest.mark.parametrize("event_type", list(EventType))
def test_each_type_round_trips_through_its_api_shape(event_type: EventType) -> None:
    body = {"eventType": event_type.value, "assetKey": ORDERS, **VERSION_VALUES[event_type]}
    parsed = AssetEvent.model_validate(body)
    assert event_json(parsed) == body
    assert AssetEvent.model_validate(event_json(parsed)) == parsed


@pytest.mark.parametrize("event_type", list(EventType))
def test_a_missing_version_names_the_field(event_type: EventType) -> None:
    (field,) = VERSION_VALUES[event_type]
    _, message = complaint({"eventType": event_type.value, "assetKey": ORDERS})
    assert f"{field} is required for {event_type.value}" in message


@pytest.mark.parametrize(
    ("extra", "location"),
    [
        ({"snapshotID": 1}, "snapshotID"),  # a near miss of snapshotId is not silently ignored
        ({"snapshot_id": 1}, "snapshot_id"),  # only the API's camelCase, so one spelling per field
        ({"interval": {"start": 0, "end": 1, "zone": "UTC"}}, "interval.zone"),
    ],
)
def test_unknown_fields_are_refused_by_name(extra: dict[str, Any], location: str) -> None:
    body = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 5, **extra}
    if "interval" in extra:
        body["eventType"] = "INTERVAL_COVERED"
    loc, message = complaint(body)
    assert loc == location
    assert "Extra inputs are not permitted" in message


def test_an_unknown_event_type_is_refused_listing_the_known_ones() -> None:
    location, message = complaint({"eventType": "SNAPSHOT_DELETED", "assetKey": ORDERS, "snapshotId": 1})
    assert location == "eventType"
    assert "SNAPSHOT_COMMITTED" in message and "INTERVAL_COVERED" in message


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("snapshotId", -1, "greater than or equal to 0"),
        ("snapshotId", 2**63, "less than or equal to"),  # past a Java long: DynamoDB would refuse it (a 500)
        ("snapshotId", 10**40, "less than or equal to"),
        ("snapshotId", True, "valid integer"),  # lax pydantic would read true as snapshot 1
        ("snapshotId", 1.5, "valid integer"),
        ("snapshotId", "abc", "valid integer"),
        ("schemaId", False, "valid integer"),
        ("totalRecordCount", 2**64, "less than or equal to"),
        ("commitTime", "2025-06-01T10:05:00", "no time zone"),
        ("commitTime", "yesterday", "not an ISO 8601 timestamp"),
        ("commitTime", 2**63, "within 0"),
        ("commitTime", "9" * 45, "JSON integer, not a string"),
        ("commitTime", "²", "not an ISO 8601 timestamp"),  # str.isdigit() is true for it, int() is not
        ("commitTime", -5, "within 0"),
        ("commitTime", "0001-01-01T00:00:00Z", "within 0"),
        ("commitTime", True, "boolean"),
        ("manifestUri", "https://bucket/manifest.json", "s3://"),
        ("tag", "", "at least 1 character"),
        ("payload", {"ratio": float("nan")}, "NaN"),  # would be answered back as invalid JSON
        ("payload", {"big": "x" * MAX_PAYLOAD_BYTES}, f"larger than {MAX_PAYLOAD_BYTES}"),
        ("payload", ["not", "an", "object"], "valid dictionary"),
        ("payload", nested(MAX_PAYLOAD_DEPTH + 1), f"the limit is {MAX_PAYLOAD_DEPTH}"),
    ],
)
def test_bad_values_are_refused_naming_the_field(field: str, value: Any, words: str) -> None:
    location, message = complaint(
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 7, field: value}
    )
    assert location == field
    assert words in message


@pytest.mark.parametrize(
    ("interval", "words"),
    [
        ({"start": "2025-06-01T10:10:00Z", "end": "2025-06-01T10:05:00Z"}, "end must be after its start"),
        ({"start": 5, "end": 5}, "end must be after its start"),
        ({"start": 0, "end": 10**17}, "9999-12-31T23:59:59.999Z"),  # could not be answered as ISO 8601 (a 500)
        ({"start": -1, "end": 5}, "within 0"),
        ({"start": "1748772300250", "end": 1748772300251}, "JSON integer, not a string"),
        ({"start": 1.0, "end": 5}, "epoch milliseconds (an integer)"),
        ({"start": "2025-06-01T10:05:00Z"}, "Field required"),
        ({"start": "2025-06-01", "end": 1748822400000}, "no time zone"),
    ],
)
def test_bad_intervals_are_refused(interval: dict[str, Any], words: str) -> None:
    location, message = complaint(
        {"eventType": "INTERVAL_COVERED", "assetKey": "s3://spool/orders", "interval": interval}
    )
    assert location.startswith("interval")
    assert words in message


# Every numeric field's documented range: (field, lowest accepted, highest accepted).
RANGES: list[tuple[str, int, int]] = [
    ("snapshotId", 0, MAX_LONG),
    ("parentSnapshotId", 0, MAX_LONG),
    ("sequenceNumber", 0, MAX_LONG),
    ("schemaId", 0, MAX_LONG),
    ("commitIdentifier", MIN_LONG, MAX_LONG),
    ("totalRecordCount", 0, MAX_LONG),
    ("deltaRecordCount", MIN_LONG, MAX_LONG),  # added minus deleted rows
    ("changelogRecordCount", 0, MAX_LONG),
    ("commitTime", 0, MAX_ISO_MS),
    ("watermark", 0, MAX_ISO_MS),
]


@pytest.mark.parametrize(("field", "low", "high"), RANGES)
def test_each_numeric_field_accepts_its_range_edges_and_refuses_one_past(field: str, low: int, high: int) -> None:
    body = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 7}
    for edge in (low, high):
        assert getattr(AssetEvent.model_validate({**body, field: edge}), _attribute(field)) == edge
    for past in (low - 1, high + 1):
        location, _ = complaint({**body, field: past})
        assert location == field


@pytest.mark.parametrize(("field", "low", "high"), RANGES)
def test_each_numeric_field_refuses_strings_floats_and_booleans(field: str, low: int, high: int) -> None:
    # Strict: an integer field takes a JSON integer. "6" is text, 6.0 a float (above 2**53 a float has
    # already lost digits of a 64-bit id), true a boolean; none is read as a number.
    body = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 7}
    for value in (str(low + 6), float(low + 6), low + 6.5, True):
        location, _ = complaint({**body, field: value})
        assert location == field, value


def _attribute(field: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in field)


def test_interval_bounds_accept_the_whole_range() -> None:
    whole = event(eventType="INTERVAL_COVERED", interval={"start": 0, "end": MAX_ISO_MS})
    assert event_json(whole)["interval"] == {
        "start": "1970-01-01T00:00:00Z",
        "end": "9999-12-31T23:59:59.999Z",
    }


def test_a_payload_at_the_depth_limit_is_accepted() -> None:
    assert event(eventType="SNAPSHOT_COMMITTED", snapshotId=1, payload=nested(MAX_PAYLOAD_DEPTH)).payload


def test_largest_values_are_accepted_and_answerable() -> None:
    big = event(
        eventType="SNAPSHOT_COMMITTED",
        snapshotId=MAX_LONG,
        commitTime=MAX_ISO_MS,
        deltaRecordCount=MIN_LONG,
        commitIdentifier=MAX_LONG,
    )
    assert big.snapshot_id == MAX_LONG and big.delta_record_count == MIN_LONG
    assert ms_to_iso(MAX_ISO_MS) == "9999-12-31T23:59:59.999Z"  # what explain and listings show


def test_instants_are_accepted_as_iso_or_epoch_milliseconds() -> None:
    as_iso = event(eventType="WATERMARK_ADVANCED", watermark="2025-06-01T10:05:00.250Z")
    as_ms = event(eventType="WATERMARK_ADVANCED", watermark=1748772300250)
    with_offset = event(eventType="WATERMARK_ADVANCED", watermark="2025-06-01T12:05:00.250+02:00")
    assert as_iso.watermark == as_ms.watermark == with_offset.watermark == 1748772300250
    assert as_iso.event_id == as_ms.event_id == with_offset.event_id  # one instant, one event
    # a query parameter is text: there, digits are epoch milliseconds
    assert parse_instant_ms("1748772300250") == 1748772300250


def test_time_helpers_round_trip() -> None:
    assert ms_to_iso(0) == "1970-01-01T00:00:00Z"
    assert ms_to_iso(1748772300250) == "2025-06-01T10:05:00.250Z"
    assert parse_instant_ms(ms_to_iso(1748772300250)) == 1748772300250


# --- identity -------------------------------------------------------------------------------


def test_identity_is_asset_type_and_version_only() -> None:
    pushed = event(eventType="SNAPSHOT_COMMITTED", snapshotId=1001, schemaId=5, commitKind="APPEND")
    polled = event(eventType="SNAPSHOT_COMMITTED", snapshotId=1001, totalRecordCount=10, commitTime=1)
    assert pushed.event_id == polled.event_id
    assert pushed.event_id == event_identity(ORDERS, EventType.SNAPSHOT_COMMITTED, "1001")
    assert len(pushed.event_id) == 32 and int(pushed.event_id, 16) >= 0


@pytest.mark.parametrize(
    "other",
    [
        {"eventType": "SNAPSHOT_COMMITTED", "snapshotId": 1002},
        {"eventType": "QUALITY_CHECK_PASSED", "snapshotId": 1001},
        {"eventType": "SNAPSHOT_COMMITTED", "snapshotId": 1001, "assetKey": "paimon://lake/ods_db/other"},
    ],
)
def test_identity_differs_with_any_of_asset_type_or_version(other: dict[str, Any]) -> None:
    base = event(eventType="SNAPSHOT_COMMITTED", snapshotId=1001)
    assert event(**other).event_id != base.event_id


def test_identity_of_an_interval_includes_its_partition() -> None:
    body = {"eventType": "INTERVAL_COVERED", "assetKey": "s3://spool/orders", "interval": {"start": 0, "end": 60000}}
    plain = AssetEvent.model_validate(body)
    eu = AssetEvent.model_validate({**body, "partitionKey": "region=eu"})
    us = AssetEvent.model_validate({**body, "partitionKey": "region=us"})
    later = AssetEvent.model_validate({**body, "interval": {"start": 0, "end": 120000}})
    assert len({plain.event_id, eu.event_id, us.event_id, later.event_id}) == 4


def test_events_are_immutable() -> None:
    snapshot = event(eventType="SNAPSHOT_COMMITTED", snapshotId=1)
    with pytest.raises(PydanticValidationError):
        snapshot.snapshot_id = 2  # type: ignore[misc]


def test_results_answer_the_contract_shape() -> None:
    accepted = EventResult(eventId="abc", status=IngestStatus.ACCEPTED, index=3)
    rejected = EventResult(status=IngestStatus.REJECTED, reason="snapshotId: required")
    assert answered(accepted) == {"eventId": "abc", "status": "ACCEPTED", "reason": None}
    assert answered(rejected) == {"eventId": None, "status": "REJECTED", "reason": "snapshotId: required"}


def answered(result: EventResult) -> dict[str, Any]:
    return EventResultAnswer.from_domain(result).dump()
