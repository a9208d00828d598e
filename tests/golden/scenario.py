"""The golden scenario: one item of every kind lakehook keeps in its table, written through the real DynamoDB
stores (``write``), and what this release's readers answer for them (``READS``, one reader per item kind).

``tests/golden/generate.py`` runs ``write`` on moto once per release and commits the items, classified by
``kind_of``, with what the readers answered then (``tests/golden/<version>/<kind>.json``);
``tests/integration/test_golden_items.py`` puts every kept release's items into a fresh table and holds what this
code's readers answer to what was recorded (docs/upgrade.md#stored-items). The names and times below are the
scenario's identities: a reader finds a kind's items by them in every release, so they never change. A new kind
of item adds its writes here, a reader in ``READS`` and a prefix in ``KINDS``.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary
from pydantic import BaseModel

from lakehook.domain.aliases import Alias
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.completion import CompletionRecord
from lakehook.domain.coverage import Span
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.partition_evaluation import PartitionFact
from lakehook.domain.producers import Producer
from lakehook.domain.snapshots import PollStatus, partition_parts
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, RunState, Trigger, partition_cursor_id, trigger_key
from lakehook.domain.versions import SnapshotRecord
from lakehook.ports.rules import AssetRecheck, Deferral, RuleError
from lakehook.usecases.ingest_state import advance_state
from tests.contracts.builders import pins, request, rule
from tests.contracts.conftest import Backend

T0 = 1_750_000_000_000  # 2025-06-15T15:06:40Z: every time of the scenario is T0 plus a little
DAY_MS = 86_400_000
ORDERS = "paimon://lake/ods_db/orders"
PAYMENTS = "paimon://lake/ods_db/payments"
SPOOL = "s3://spool/orders"
RULE, GROUP, PARTITION = "golden_rule", "g", "dt=2025-06-15"
MAPPING = "dt=dt"
PRODUCER, EVENT_SOURCE = "golden-writer", "com.example.orders"
ALIAS, NAMESPACE = "golden_ods", "poller"
REQUEST_KEY = "golden-request"
WATCH_KEY = "TABLE#ods_db.orders"

# Kinds by the sort key's start, then by the partition key's (keys.py's layout); the first match names the kind.
KINDS: tuple[tuple[str, str, str], ...] = (
    ("state", "ASSET#", "STATE"),
    ("asset", "ASSET#", "META"),
    ("event", "ASSET#", "EVENT#"),
    ("partition_parts", "ASSET#", "PARTS#"),
    ("poll_status", "ASSET#", "POLL"),
    ("rule_index", "ASSET#", "RULE#"),
    ("state_history", "ASSET#", "HIST#"),
    ("snapshot_log", "ASSET#", "SNAPLOG#"),
    ("recheck", "ASSET#", "RECHECK"),
    ("partition_fact", "ASSET#", "PFACT#"),
    ("partition_version", "ASSET#", "PVER#"),
    ("coverage", "ASSET#", "COVERAGE#"),
    ("rule", "RULE#", "META"),
    ("cursor", "RULE#", "CURSOR#"),
    ("deferral", "RULE#", "DEFER#"),
    ("partition_pending", "RULE#", "PPEND#"),
    ("trigger", "TRIGGER#", "CLAIM"),
    ("request", "REQUEST#", "REQUEST"),
    ("producer", "PRODUCER#", "META"),
    ("event_source", "EVSOURCE#", "OWNER"),
    ("watermark", "WM#", "KEY#"),
    ("watch", "WATCH#", "ASSET#"),
    ("alias", "ALIAS#", "META"),
)


def kind_of(item: Mapping[str, Any]) -> str:
    """The kind of a stored item, by its keys; an item of no known kind is a kind this scenario must learn."""
    for kind, pk, sk in KINDS:
        if str(item["PK"]).startswith(pk) and str(item["SK"]).startswith(sk):
            return kind
    raise ValueError(f"an item of no known kind: PK={item['PK']!r} SK={item['SK']!r} (name it in KINDS)")


# --- the writes ---------------------------------------------------------------------------------------------------


def event(snapshot_id: int, asset: str = ORDERS, **fields: Any) -> AssetEvent:
    body = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": snapshot_id, **fields}
    return AssetEvent.model_validate(body)


def claimed_trigger(snapshot: int, partition: str | None = None, sequence: int = 1) -> Trigger:
    pinned = pins(snapshot, ORDERS)
    return Trigger(
        trigger_key=trigger_key(RULE, GROUP, pinned, None, 0, None, partition),
        rule_id=RULE,
        group_id=GROUP,
        inputs=pinned,
        partition=partition,
        sequence=sequence,
        created_at=T0 + 100 + snapshot,
        updated_at=T0 + 100 + snapshot,
    )


def write(backend: Backend) -> None:
    """Every kind of item, as this release's stores write it (a state history of several steps where it has one)."""
    _write_assets(backend)
    _write_rules_and_triggers(backend)
    _write_partitions(backend)
    _write_the_rest(backend)


def _write_assets(backend: Backend) -> None:
    source = {"catalog": "lake", "properties": {"warehouse": "s3://lake/wh"}, "table": "ods_db.orders"}
    registration = {"assetKey": ORDERS, "format": "paimon", "source": source, "description": "the orders"}
    backend.registry.put_asset(AssetRegistration.model_validate(registration), T0)
    backend.producers.put_producer(
        Producer(
            producer_id=PRODUCER,
            asset_key_prefixes=["paimon://lake/ods_db/", "s3://spool/"],
            secret_ref=f"lakehook-producers/{PRODUCER}",
            created_at=T0,
            updated_at=T0,
        )
    )
    backend.producers.claim_event_source(EVENT_SOURCE, PRODUCER)
    first = event(7, schemaId=1, commitKind="APPEND", commitTime=T0 - 5_000, partitions=["dt=2025-06-15"])
    for recorded in (first, event(8, schemaId=2, commitKind="OVERWRITE", commitTime=T0 - 1_000)):
        backend.assets.record_event(recorded, SourceType.PUSH, T0 + recorded.snapshot_id, PRODUCER)  # type: ignore[operator]
        advance_state(backend.assets, recorded, T0 + 10 + recorded.snapshot_id)  # type: ignore[operator]
        backend.assets.mark_settled(recorded)
    verdict = AssetEvent.model_validate({"eventType": "QUALITY_CHECK_PASSED", "assetKey": ORDERS, "snapshotId": 8})
    backend.assets.record_event(verdict, SourceType.POLL, T0 + 20)
    advance_state(backend.assets, verdict, T0 + 21)
    watermark = AssetEvent.model_validate({"eventType": "WATERMARK_ADVANCED", "assetKey": PAYMENTS, "watermark": T0})
    backend.assets.record_event(watermark, SourceType.PUSH, T0 + 22, PRODUCER)
    advance_state(backend.assets, watermark, T0 + 23)
    wide = event(9, commitTime=T0)
    backend.assets.record_partition_parts(partition_parts(wide, (("dt=2025-06-14", "dt=2025-06-15"),)), T0 + 30)
    backend.polls.put(
        PollStatus(
            asset_key=ORDERS,
            last_polled_at=T0 + 40,
            last_success_at=T0 + 30,
            last_snapshot_id=8,
            consecutive_failures=1,
            last_error="AccessDenied",
            last_error_kind="SourceAccessError",
            last_error_at=T0 + 40,
            next_attempt_at=T0 + 60_000,
            warnings=("a future commit time",),
        )
    )
    states = [AssetState(asset_key=ORDERS, version=v, latest_snapshot_id=v + 6, latest_schema_id=v) for v in (1, 2)]
    backend.history.record({ORDERS: states}, T0 + 50)
    snapshots = [SnapshotRecord(snapshot_id=s, order=s, commit_kind="APPEND", commit_time=T0 + s) for s in (7, 8)]
    backend.history.record_snapshots({ORDERS: snapshots}, T0 + 50)
    backend.history.log_snapshot(
        ORDERS, SnapshotRecord(snapshot_id=6, order=6, commit_kind="APPEND"), T0 + 51, late=True
    )
    backend.coverage.add(SPOOL, Span(T0, T0 + 300_000), T0 + 60)
    backend.coverage.add_many(SPOOL, [Span(T0 + 600_000, T0 + DAY_MS + 60_000)], T0 + 61)
    backend.coverage.add(SPOOL, Span(T0, T0 + 60_000), T0 + 62, partition_key=PARTITION)
    backend.watermarks.put(NAMESPACE, ORDERS, "offset", {"snapshot": 8, "at": [1, "two", None, 3.5]}, T0 + 70)


def _write_rules_and_triggers(backend: Backend) -> None:
    backend.rules.put_rule(rule(RULE, ORDERS, PAYMENTS), T0)
    backend.rules.record_error(RULE, RuleError("golden: an evaluation failed", T0 + 5, GROUP))
    made = claimed_trigger(7)
    backend.triggers.claim(made, GroupCursor.initial(RULE, GROUP).after(made, {}), None)
    attempt = backend.ledger.begin_attempt(made.trigger_key, "dispatcher-1", T0 + 200, 300_000)
    assert attempt is not None
    uri = f"s3://lakehook-manifests/manifests/{made.trigger_key}.json"
    running = RunState(state="running", detail="queued then started", checked_at=T0 + 210)
    backend.ledger.mark_succeeded(made.trigger_key, "dispatcher-1", "run-7", uri, T0 + 205, running)
    outlets = ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": "paimon://lake/dwd_db/fact", "snapshotId": 3},)
    backend.ledger.record_completion(made.trigger_key, CompletionRecord.of("SUCCEEDED", outlets, T0 + 300))
    failing = claimed_trigger(8, sequence=2)
    current = backend.triggers.get_cursors([(RULE, GROUP)])[(RULE, GROUP)]
    backend.triggers.claim(failing, current.after(failing, {}), current)
    assert backend.ledger.begin_attempt(failing.trigger_key, "dispatcher-1", T0 + 400, 300_000) is not None
    backend.ledger.mark_failed(
        failing.trigger_key, "dispatcher-1", "HTTP 503", "http_503", True, uri, T0 + 401, T0 + 60_401, T0 + 401
    )
    replay = made.model_copy(
        update={"trigger_key": f"{made.trigger_key}.replay", "replay_of": made.trigger_key, "created_at": T0 + 500}
    )
    backend.triggers.put_replay_once(replay, request(REQUEST_KEY, replay.trigger_key, at=T0 + 500))
    partitioned = claimed_trigger(7, partition=PARTITION)
    cursor_id = partition_cursor_id(GROUP, PARTITION)
    initial = GroupCursor(rule_id=RULE, group_id=cursor_id, partition=PARTITION)
    backend.triggers.claim(partitioned, initial.after(partitioned, {}), None)
    backend.deferrals.defer(Deferral(RULE, GROUP, T0 + 900))
    backend.deferrals.recheck([PAYMENTS], T0 + 950)


def _write_partitions(backend: Backend) -> None:
    fact = PartitionFact(ORDERS, MAPPING, PARTITION, 80, 8, 2, T0 - 1_000)
    backend.partitions.advance([fact], T0 + 600)
    older = PartitionFact(ORDERS, MAPPING, PARTITION, 70, 7, 1, T0 - 5_000)
    backend.partitions.record_versions([older, fact], T0 + 600)
    backend.partitions.mark_pending(RULE, GROUP, [PARTITION, "dt=2025-06-14"], T0 + 610)


def _write_the_rest(backend: Backend) -> None:
    backend.aliases.put_alias(
        Alias(name=ALIAS, asset_keys=(ORDERS, PAYMENTS), description="the ODS", created_at=T0, updated_at=T0)
    )


# --- the readers ----------------------------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A reader's answer as JSON: models by their API names, dataclasses and named tuples by field."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {"|".join(map(str, k)) if isinstance(k, tuple) else str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    return value


def _triggers(backend: Backend) -> Any:
    page = backend.triggers.list_for_rule(RULE, limit=10)
    keys = [t.trigger_key for t in page.items]
    return {"listed": page.items, "ledger": [backend.ledger.get(k) for k in keys]}


def _deferrals(backend: Backend) -> Any:
    return [d for d in backend.deferrals.due(T0 + DAY_MS, 10) if isinstance(d, Deferral)]


def _rechecks(backend: Backend) -> Any:
    return [d for d in backend.deferrals.due(T0 + DAY_MS, 10) if isinstance(d, AssetRecheck)]


READS: dict[str, Callable[[Backend], Any]] = {
    "state": lambda b: {"store": b.assets.get_state(ORDERS), "reader": b.reader.get_states([ORDERS, PAYMENTS])},
    "asset": lambda b: {"get": b.registry.get_asset(ORDERS), "list": b.registry.list_assets(10).items},
    "event": lambda b: {
        "listed": b.assets.list_events(ORDERS, 10).items,
        "snapshots": b.reader.snapshots([(ORDERS, 7), (ORDERS, 8)]),
        "verdicts": b.reader.quality_verdicts([(ORDERS, 8)]),
    },
    "partition_parts": lambda b: b.assets.partition_parts(ORDERS, 9),
    "poll_status": lambda b: b.polls.get(ORDERS),
    "rule_index": lambda b: b.rules.rules_for_asset(PAYMENTS),
    "state_history": lambda b: b.history.between(ORDERS, 0, 100),
    "snapshot_log": lambda b: b.history.snapshots_after(ORDERS, 0, 10),
    "recheck": _rechecks,
    "partition_fact": lambda b: b.partitions.facts([(ORDERS, MAPPING, PARTITION)]),
    "partition_version": lambda b: b.partitions.versions_after((ORDERS, MAPPING, PARTITION), 0, 10),
    "coverage": lambda b: {
        "asset": b.coverage.spans(SPOOL, T0 - DAY_MS, T0 + 2 * DAY_MS),
        "partition": b.coverage.spans(SPOOL, T0 - DAY_MS, T0 + DAY_MS, partition_key=PARTITION),
    },
    "rule": lambda b: {"get": b.rules.get_rule(RULE), "list": b.rules.list_rules(10).items},
    "cursor": lambda b: b.triggers.get_cursors([(RULE, GROUP), (RULE, partition_cursor_id(GROUP, PARTITION))]),
    "deferral": _deferrals,
    "partition_pending": lambda b: {
        "count": b.partitions.count_pending(RULE, GROUP),
        "since": b.partitions.pending_since(RULE, GROUP),
        "keys": sorted(b.partitions.pending(RULE, GROUP, 10)),
    },
    "trigger": _triggers,
    "request": lambda b: b.triggers.get_request(REQUEST_KEY, T0 + 1_000),
    "producer": lambda b: {"get": b.producers.get_producer(PRODUCER), "list": b.producers.list_producers(10).items},
    "event_source": lambda b: b.producers.event_source_owner(EVENT_SOURCE),
    "watermark": lambda b: b.watermarks.list(NAMESPACE, ORDERS),
    "watch": lambda b: b.registry.assets_watching(WATCH_KEY),
    "alias": lambda b: {"get": b.aliases.get_alias(ALIAS), "list": b.aliases.list_aliases(10).items},
}


# --- items as JSON (DynamoDB's plain values; a binary or a set said so, as JSON has neither) ----------------------


def to_json(value: Any) -> Any:
    if isinstance(value, Binary | bytes | bytearray):
        return {"$binary": base64.b64encode(bytes(value.value if isinstance(value, Binary) else value)).decode()}
    if isinstance(value, set):
        return {"$set": sorted(to_json(v) for v in value)}
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value


def from_json(value: Any) -> Any:
    if isinstance(value, Mapping) and set(value) == {"$binary"}:
        return Binary(base64.b64decode(value["$binary"]))
    if isinstance(value, Mapping) and set(value) == {"$set"}:
        return {from_json(v) for v in value["$set"]}
    if isinstance(value, Mapping):
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if isinstance(value, float):
        return Decimal(str(value))
    return value
