"""Push events to lakehook from a writer job: HMAC-signed, retried, with a stable event identity.

Standard library only (``urllib``; signed by :mod:`lakehook.client.signing`), so a Spark driver, an Airflow task
or a shell script can use it without lakehook's server dependencies::

    from lakehook.client import PushClient, snapshot_event_from_iceberg

    client = PushClient("https://api.example.com/prod", producer_id="orders-writer", secret=SECRET)
    table.append(rows)                                    # a pyiceberg commit
    client.send(snapshot_event_from_iceberg(table))       # -> [PushResult(event_id=..., status='ACCEPTED')]

Every attempt is signed afresh (the signature is valid for five minutes) over the same body, and an
event's id is derived from (asset, type, version) exactly as the server derives it: a retry after a
lost answer is answered DUPLICATE, never recorded twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lakehook.client.retrying import HttpRejectedError, HttpUnavailableError
from lakehook.client.signed import SignedClient
from lakehook.wire.iceberg_counts import counts_from_summary

PUSH_PATH = "/asset-events"

# The field that versions each event type, as the API names it (the server's identity uses the same).
VERSION_FIELDS = {
    "SNAPSHOT_COMMITTED": "snapshotId",
    "WATERMARK_ADVANCED": "watermark",
    "TAG_CREATED": "tag",
    "QUALITY_CHECK_PASSED": "snapshotId",
    "QUALITY_CHECK_FAILED": "snapshotId",
    "SCHEMA_CHANGE_APPROVED": "schemaId",
    "SCHEMA_CHANGE_REJECTED": "schemaId",
    "BACKFILL_STARTED": "backfillId",
    "BACKFILL_COMPLETED": "backfillId",
    "CDC_LAG_RECOVERED": "watermark",
    "MANIFEST_SEALED": "manifestUri",
    "MANIFEST_INTERRUPTED": "manifestUri",
    "INTERVAL_COVERED": "interval",
}
_INSTANT_FIELDS = frozenset({"watermark"})


class PushError(Exception):
    """The events could not be delivered."""


class PushRejectedError(PushError):
    """The API refused the request (a 4xx other than 429); retrying would not help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class PushUnavailableError(PushError):
    """Every attempt failed with 429, 5xx or a connection error."""


@dataclass(frozen=True)
class PushResult:
    """What the API did with one event: ACCEPTED, DUPLICATE, STALE or REJECTED (with a reason)."""

    event_id: str | None
    status: str
    reason: str | None = None

    @property
    def recorded(self) -> bool:
        """Whether lakehook holds the event now (a DUPLICATE was recorded by an earlier attempt)."""
        return self.status in ("ACCEPTED", "DUPLICATE", "STALE")


def instant_ms(value: Any) -> int:
    """Epoch milliseconds from an int, a digit string or an ISO 8601 string with a zone."""
    if isinstance(value, bool):
        raise ValueError("expected an ISO 8601 timestamp or epoch milliseconds, got a boolean")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.isascii() and text.isdigit():
        return int(text)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no time zone; use UTC with a trailing Z")
    return int(moment.timestamp() * 1000)


def event_id(event: Mapping[str, Any]) -> str:
    """The id lakehook gives the event: a hash of (asset, type, version). Same event, same id."""
    event_type = str(event["eventType"])
    field = VERSION_FIELDS.get(event_type)
    if field is None:
        raise ValueError(f"unknown eventType {event_type!r}")
    value = event.get(field)
    if value is None:
        raise ValueError(f"{field} is required for {event_type}")
    if field == "interval":
        version = f"{instant_ms(value['start'])}-{instant_ms(value['end'])}"
        if event.get("partitionKey"):
            version += f"@{event['partitionKey']}"
    elif field in _INSTANT_FIELDS:
        version = str(instant_ms(value))
    else:
        version = str(value)
    digest = hashlib.sha256(f"{event['assetKey']}\x00{event_type}\x00{version}".encode()).hexdigest()
    return digest[:32]


class PushClient(SignedClient):
    """Signs and sends events to ``POST /asset-events`` with bounded, jittered retries (options:
    :class:`~lakehook.client.signed.SignedClient`)."""

    PATH = PUSH_PATH

    def send(self, *events: Mapping[str, Any]) -> list[PushResult]:
        """Send the events in one request; answer one result per event, in order."""
        if not events:
            raise ValueError("nothing to send")
        for event in events:
            event_id(event)  # a malformed event fails here, before any request
        body = json.dumps({"events": [dict(e) for e in events]}, separators=(",", ":")).encode()
        answer = self._post(body)
        return [PushResult(r.get("eventId"), str(r.get("status")), r.get("reason")) for r in answer["results"]]

    def send_all(self, events: Iterable[Mapping[str, Any]], batch_size: int = 25) -> list[PushResult]:
        """Send many events in batches of ``batch_size``."""
        batch: list[Mapping[str, Any]] = []
        results: list[PushResult] = []
        for event in events:
            batch.append(event)
            if len(batch) == batch_size:
                results += self.send(*batch)
                batch = []
        if batch:
            results += self.send(*batch)
        return results

    def _post(self, body: bytes) -> dict[str, Any]:
        try:
            return self._retrying.post_json(self.url, body, self._signed_headers(body))
        except HttpRejectedError as exc:
            raise PushRejectedError(exc.status, exc.message) from exc
        except HttpUnavailableError as exc:
            raise PushUnavailableError(str(exc)) from exc


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def snapshot_event_from_iceberg(
    table: Any, snapshot: Any = None, *, asset_key: str | None = None, catalog: str | None = None
) -> dict[str, Any]:
    """The SNAPSHOT_COMMITTED event for a pyiceberg table's snapshot (by default the current one).

    The key is ``iceberg://<catalog>/<namespace>/<table>`` (the catalog's name unless given). The event
    carries ``sequenceNumber``: Iceberg snapshot ids are random, so lakehook orders snapshots by it; and
    ``metadataLocation``, the ``metadata.json`` that holds the snapshot, which run manifests pin.
    """
    if snapshot is None:
        snapshot = table.current_snapshot()
        if snapshot is None:
            raise ValueError("the table has no snapshot yet; commit first")
    elif isinstance(snapshot, int):
        found = table.snapshot_by_id(snapshot)
        if found is None:
            raise ValueError(f"the table has no snapshot {snapshot}")
        snapshot = found
    if asset_key is None:
        *namespace, name = table.name()
        asset_key = f"iceberg://{catalog or table.catalog.name}/{'.'.join(namespace)}/{name}"
    summary = snapshot.summary
    operation = summary.operation.value if summary is not None else None
    properties = {str(k): str(v) for k, v in summary.additional_properties.items()} if summary is not None else {}
    counts = counts_from_summary(operation, properties)  # as the Iceberg poller counts the same snapshot
    # the metadata.json the snapshot's own commit wrote, as the Iceberg poller finds it
    metadata = table.metadata
    written = {entry.timestamp_ms: entry.metadata_file for entry in metadata.metadata_log}
    location = written.get(snapshot.timestamp_ms)
    if location is None and snapshot.snapshot_id == metadata.current_snapshot_id:
        location = table.metadata_location
    return _drop_none(
        {
            "eventType": "SNAPSHOT_COMMITTED",
            "assetKey": asset_key,
            "metadataLocation": location,
            "snapshotId": snapshot.snapshot_id,
            "parentSnapshotId": snapshot.parent_snapshot_id,
            "sequenceNumber": snapshot.sequence_number,
            "schemaId": snapshot.schema_id,
            "commitTime": snapshot.timestamp_ms,
            "commitKind": operation.upper() if operation is not None else None,
            "totalRecordCount": counts.total_rows,
            "deltaRecordCount": counts.delta_rows,
            "dataChanged": None if counts.data_changed else False,
        }
    )


def snapshot_event_from_paimon(table: Any, *, asset_key: str | None = None, catalog: str = "lake") -> dict[str, Any]:
    """The SNAPSHOT_COMMITTED event for a pypaimon table's latest snapshot.

    The key is ``paimon://<catalog>/<database>/<table>``; pypaimon tables do not know their catalog's
    name, so pass ``catalog`` (default ``lake``) or the whole ``asset_key``.
    """
    snapshot = table.snapshot_manager().get_latest_snapshot()
    if snapshot is None:
        raise ValueError("the table has no snapshot yet; commit first")
    if asset_key is None:
        ident = table.identifier
        asset_key = f"paimon://{catalog}/{ident.get_database_name()}/{ident.get_table_name()}"
    watermark = snapshot.watermark
    return _drop_none(
        {
            "eventType": "SNAPSHOT_COMMITTED",
            "assetKey": asset_key,
            "snapshotId": snapshot.id,
            "parentSnapshotId": snapshot.id - 1 if snapshot.id > 1 else None,
            "schemaId": snapshot.schema_id,
            "commitTime": snapshot.time_millis,
            "commitKind": snapshot.commit_kind,
            "commitUser": snapshot.commit_user,
            "commitIdentifier": snapshot.commit_identifier,
            "totalRecordCount": snapshot.total_record_count,
            "deltaRecordCount": snapshot.delta_record_count,
            # Java writes Long.MIN_VALUE when a commit carries no watermark
            "watermark": watermark if watermark is not None and watermark >= 0 else None,
        }
    )
