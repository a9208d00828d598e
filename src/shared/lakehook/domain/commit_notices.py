"""Commits the lakehouse announces itself: which registered tables a catalog or object-store event names.

No writer has to change for lakehook to learn of a commit in seconds. Two announcements are read, both as
EventBridge delivers them:

* AWS Glue's "Glue Data Catalog Table State Change": an Iceberg commit to a Glue catalog updates the table
  (its ``metadata_location``), naming the database and the table;
* S3's "Object Created" (the warehouse bucket sends its events to EventBridge): a commit writes a file
  whose key says which table it belongs to - Iceberg ``metadata/*.metadata.json`` (or ``version-hint.text``),
  Paimon ``snapshot/snapshot-<n>`` (or its ``LATEST`` hint), Delta ``_delta_log/<version>.json``, Hudi
  ``.hoodie/<instant>.commit`` (and ``deltacommit``, ``replacecommit``; under ``.hoodie/timeline/`` in 1.x).

A notice is no evidence in itself: it only asks for a poll of the tables it names, through the same path,
offsets and deduplication as the scheduled poll. Each registered table is indexed when it is registered
under its *watch keys* (its ``database.table``, and its root location when the registration says it), so a
notice finds its tables with one lookup. Anything else is ignored with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lakehook.domain.assets import CATALOG_FORMATS, PATH_FORMATS, AssetRegistration

GLUE_SOURCE = "aws.glue"
GLUE_TABLE_CHANGE = "Glue Data Catalog Table State Change"
GLUE_COMMIT_CHANGES = (
    "UpdateTable",
)  # partition changes are Hive-style tables; a new table is in the database's events
S3_SOURCE = "aws.s3"
S3_OBJECT_CREATED = "Object Created"

TABLE_PREFIX = "TABLE#"
LOCATION_PREFIX = "LOCATION#"

_ICEBERG_METADATA = re.compile(r"^(?:\d+-[0-9a-fA-F-]+|v\d+)(?:\.gz)?\.metadata\.json$|^version-hint\.text$")
_PAIMON_SNAPSHOT = re.compile(r"^snapshot-\d+$|^LATEST$")
_DELTA_COMMIT = re.compile(r"^\d{20}\.json$")
_HUDI_INSTANT = re.compile(r"^\d+(?:_\d+)?\.(?:commit|deltacommit|replacecommit)$")


@dataclass(frozen=True)
class WatchEntry:
    """One registered table under one watch key, with what a Glue notice must match (its catalog)."""

    asset_key: str
    catalog_type: str = ""  # pyiceberg's ``type`` (``glue``, ``sql``, ``rest``) or pypaimon's ``metastore``
    region: str = ""  # ``glue.region`` / ``client.region`` when the catalog states it
    account: str = ""  # ``glue.id``: the catalog's account, when stated


@dataclass(frozen=True)
class CommitNotice:
    """A commit announced for ``watch_key``: poll the tables registered under it."""

    watch_key: str
    origin: str  # GLUE_SOURCE or S3_SOURCE
    described: str  # what the notice said, for logs: ``glue table dw_db.orders`` / ``s3://bucket/key``
    region: str = ""
    account: str = ""

    def concerns(self, entry: WatchEntry) -> bool:
        """Whether the registered table is the one announced. A Glue notice names a table in one account's
        catalog: it concerns Glue-catalog registrations only, and their region and account when stated."""
        if self.origin != GLUE_SOURCE:
            return True
        return (
            entry.catalog_type == "glue"
            and (not entry.region or not self.region or entry.region == self.region)
            and (not entry.account or not self.account or entry.account == self.account)
        )


@dataclass(frozen=True)
class NoticeIgnored:
    """An event that announces no commit lakehook can poll, and why (logged and counted, never retried)."""

    reason: str


def table_watch_key(table: str) -> str:
    """``database.table`` as Glue names it (Glue keeps names in lower case)."""
    return TABLE_PREFIX + table.lower()


def location_watch_key(location: str) -> str:
    """A table's root, as S3 keys name it: ``s3://bucket/path`` without a trailing slash (``s3a://`` and
    ``s3n://`` are the same objects)."""
    scheme, sep, rest = location.partition("://")
    if sep and scheme.lower() in ("s3", "s3a", "s3n"):
        location = f"s3://{rest}"
    return LOCATION_PREFIX + location.rstrip("/")


def watch_entries(asset: AssetRegistration) -> dict[str, WatchEntry]:
    """The watch keys a registered table is indexed under, each with its entry; none without a source.

    A catalog table is watched by its ``database.table`` (for Glue notices) and, when its catalog names a
    ``warehouse``, by the root both pyiceberg's SQL catalog and Paimon's file-system catalog give it:
    ``<warehouse>/<database>.db/<table>``. A Delta or Hudi table is watched by its location.
    """
    source = asset.source
    if source is None:
        return {}
    if asset.format in PATH_FORMATS and source.location:
        return {location_watch_key(source.location): WatchEntry(asset.asset_key)}
    if asset.format not in CATALOG_FORMATS or not source.table:
        return {}
    props = source.properties
    entry = WatchEntry(
        asset_key=asset.asset_key,
        catalog_type=(props.get("type") or props.get("metastore") or "").lower(),
        region=props.get("glue.region") or props.get("client.region") or "",
        account=props.get("glue.id") or "",
    )
    found = {table_watch_key(source.table): entry}
    warehouse = props.get("warehouse", "")
    if "://" in warehouse or warehouse.startswith("/"):
        database, table = source.table.split(".", 1)
        found[location_watch_key(f"{warehouse.rstrip('/')}/{database}.db/{table}")] = entry
    return found


def table_root(bucket: str, key: str) -> str | None:
    """The root of the table a commit file belongs to, or None when the key is not a commit file."""
    parts = key.split("/")
    if len(parts) < 3 or not bucket:
        return None
    name, parent = parts[-1], parts[-2]
    commit_file = {
        "metadata": _ICEBERG_METADATA,
        "snapshot": _PAIMON_SNAPSHOT,
        "_delta_log": _DELTA_COMMIT,
        ".hoodie": _HUDI_INSTANT,
    }.get(parent)
    if commit_file is not None and commit_file.match(name):
        root = parts[:-2]
    elif parent == "timeline" and len(parts) >= 4 and parts[-3] == ".hoodie" and _HUDI_INSTANT.match(name):
        root = parts[:-3]  # Hudi 1.x keeps its timeline under .hoodie/timeline/
    else:
        return None
    path = "/".join(root).strip("/")
    return f"s3://{bucket}/{path}" if path else None


def read_notice(event: Mapping[str, Any]) -> CommitNotice | NoticeIgnored:
    """The commit an EventBridge event announces, or why it announces none. Never raises."""
    source, detail_type = event.get("source"), event.get("detail-type")
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        return NoticeIgnored(f"event {source!r} / {detail_type!r} has no detail object")
    region = _text(event.get("region"))
    account = _text(event.get("account"))
    if source == GLUE_SOURCE and detail_type == GLUE_TABLE_CHANGE:
        database, table, change = (_text(detail.get(k)) for k in ("databaseName", "tableName", "typeOfChange"))
        if not database or not table:
            return NoticeIgnored("a Glue table change without databaseName and tableName")
        if change not in GLUE_COMMIT_CHANGES:
            return NoticeIgnored(f"Glue change {change!r} of {database}.{table} is not a commit")
        return CommitNotice(
            table_watch_key(f"{database}.{table}"), GLUE_SOURCE, f"glue table {database}.{table}", region, account
        )
    if source == S3_SOURCE and detail_type == S3_OBJECT_CREATED:
        bucket_info, object_info = detail.get("bucket"), detail.get("object")
        bucket = _text(bucket_info.get("name")) if isinstance(bucket_info, Mapping) else ""
        key = _text(object_info.get("key")) if isinstance(object_info, Mapping) else ""
        if not bucket or not key:
            return NoticeIgnored("an S3 Object Created event without bucket.name and object.key")
        root = table_root(bucket, key)
        if root is None:
            return NoticeIgnored(f"s3://{bucket}/{key} is not a table's commit file")
        return CommitNotice(location_watch_key(root), S3_SOURCE, f"s3://{bucket}/{key}", region, account)
    return NoticeIgnored(f"event {source!r} / {detail_type!r} announces no commit lakehook reads")


def _text(value: Any) -> str:
    return value if isinstance(value, str) and len(value) <= 2048 else ""
