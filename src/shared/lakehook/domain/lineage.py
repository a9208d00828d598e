"""OpenLineage RunEvents as evidence: a completed run's output datasets become snapshot events.

Jobs that already emit OpenLineage (Spark, Airflow, dbt, Flink integrations) need no lakehook code: their
HTTP transport posts RunEvents to ``POST /api/v1/lineage``. Only a ``COMPLETE`` event says data was
committed; each of its outputs names a dataset (namespace + name) and, where the integration reports it,
the version it wrote (the ``version`` dataset facet: Spark's Iceberg integration reports the snapshot id,
Delta the table version). A dataset becomes an asset key through the producer's ``lineageDatasets``
mappings, first match wins, or by the default: a namespace that is itself ``<format>://<catalog>``
(``iceberg``, ``paimon``, ``delta``, ``hudi``) gives ``<namespace>/<name with '.' as '/'>``. A dataset
has more than one name when the integration reports its catalog names in the ``symlinks`` facet (Spark
names a Glue or Hive table by its storage location, ``s3://bucket`` + path, and its Glue name
``arn:aws:glue:<region>:<account>`` + ``table/<db>/<table>`` only as a symlink): the mappings are tried on
the dataset's own name first, then on each symlink in order, then the default on each of them.

Every facet is read a bounded number of times (once to measure, once to copy), so a request's cost is
linear in its size; the number of facets and symlinks of one dataset is bounded too
(:data:`~lakehook.domain.limits.MAX_DATASET_FACETS`, :data:`~lakehook.domain.limits.MAX_SYMLINKS`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lakehook.domain.json_input import json_depth
from lakehook.domain.limits import (
    MAX_DATASET_FACETS,
    MAX_LONG,
    MAX_PARTITION_KEY_LENGTH,
    MAX_PAYLOAD_BYTES,
    MAX_PAYLOAD_DEPTH,
    MAX_SYMLINKS,
    MAX_TOUCHED_PARTITION_BYTES,
    MAX_TOUCHED_PARTITIONS,
)
from lakehook.domain.partitions import PartitionKeyError, TouchedPartitions, format_partition_key, partitions_json

TABLE_FORMATS = ("iceberg", "paimon", "delta", "hudi")
COMPLETE = "COMPLETE"
VERSION_FACET = "version"  # DatasetVersionDatasetFacet: {"datasetVersion": "..."}
SYMLINKS_FACET = "symlinks"  # SymlinksDatasetFacet: {"identifiers": [{"namespace", "name", "type"}]}
# OutputSubsetOutputDatasetFacet (BaseSubsetDatasetFacet.json): the output facet "subset" whose outputCondition
# {"type": "partition", "partitions": [{"dimensions": {"dt": "2026-12-01"}, "identifier": ...}]} names partitions
SUBSET_FACET = "subset"
MAX_OUTPUTS = 100
MAX_NAME = 1024  # a dataset's namespace or name, its own or a symlink's


class LineageMapping(BaseModel):
    """One rule from an OpenLineage dataset to an asset key: ``assetKeyPrefix`` + the rest of the name,
    its ``.`` and ``/`` separators as ``/``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    namespace: str = Field(min_length=1, max_length=512, description="the dataset namespace, exactly")
    name_prefix: str = Field(
        default="", alias="namePrefix", max_length=512, description="the start of the dataset name it covers"
    )
    asset_key_prefix: str = Field(
        alias="assetKeyPrefix",
        min_length=4,
        max_length=512,
        description="e.g. iceberg://glue/ : the dataset name's rest is appended",
    )

    @field_validator("asset_key_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if "://" not in value or any(c.isspace() for c in value):
            raise ValueError(f"assetKeyPrefix {value!r} must start with <scheme>:// and have no spaces")
        return value

    def asset_key(self, namespace: str, name: str) -> str | None:
        if namespace != self.namespace or not name.startswith(self.name_prefix):
            return None
        rest = _path(name[len(self.name_prefix) :])
        if not rest:
            return None
        prefix = self.asset_key_prefix
        return prefix + rest if prefix.endswith("/") else f"{prefix}/{rest}"


class LineageDataset(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    namespace: str = Field(min_length=1, max_length=MAX_NAME)
    name: str = Field(min_length=1, max_length=MAX_NAME)
    facets: dict[str, Any] = Field(default_factory=dict)
    output_facets: dict[str, Any] = Field(default_factory=dict, alias="outputFacets")

    @model_validator(mode="after")
    def _bounded(self) -> LineageDataset:
        count = len(self.facets) + len(self.output_facets)
        if count > MAX_DATASET_FACETS:
            raise ValueError(
                f"dataset {self.namespace}/{self.name} has {count} facets and output facets: at most "
                f"{MAX_DATASET_FACETS} (MAX_DATASET_FACETS)"
            )
        symlinks = self.facets.get(SYMLINKS_FACET)
        identifiers = symlinks.get("identifiers") if isinstance(symlinks, dict) else None
        if isinstance(identifiers, list) and len(identifiers) > MAX_SYMLINKS:
            raise ValueError(
                f"dataset {self.namespace}/{self.name} has {len(identifiers)} symlinks identifiers: at most "
                f"{MAX_SYMLINKS} (MAX_SYMLINKS)"
            )
        for identifier in identifiers if isinstance(identifiers, list) else []:
            parts = [identifier.get("namespace"), identifier.get("name")] if isinstance(identifier, dict) else []
            if any(isinstance(part, str) and len(part) > MAX_NAME for part in parts):
                raise ValueError(f"a symlinks identifier of {self.namespace}/{self.name} is over {MAX_NAME} characters")
        return self

    def names(self) -> list[tuple[str, str]]:
        """(namespace, name): the dataset's own, then each well-formed ``symlinks`` identifier, in order."""
        found = [(self.namespace, self.name)]
        symlinks = self.facets.get(SYMLINKS_FACET)
        identifiers = symlinks.get("identifiers") if isinstance(symlinks, dict) else None
        for identifier in identifiers if isinstance(identifiers, list) else []:
            if not isinstance(identifier, dict):
                continue
            namespace, name = identifier.get("namespace"), identifier.get("name")
            if isinstance(namespace, str) and isinstance(name, str) and namespace and name:
                found.append((namespace, name))
        return found


class LineageRun(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    run_id: str = Field(alias="runId", min_length=1, max_length=256)


class LineageJob(BaseModel):
    model_config = ConfigDict(extra="allow")

    namespace: str = Field(min_length=1, max_length=1024)
    name: str = Field(min_length=1, max_length=1024)


class RunEvent(BaseModel):
    """The parts of an OpenLineage event (spec 2-0-2) lakehook reads; the rest is allowed and ignored.

    A RunEvent has ``run`` and ``job``; the static DatasetEvent and JobEvent have neither a run nor an
    ``eventType``: they are answered with no results (they announce no commit).
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    event_type: str | None = Field(default=None, alias="eventType", max_length=64)
    event_time: datetime = Field(alias="eventTime")
    run: LineageRun | None = None
    job: LineageJob | None = None
    producer: str = Field(max_length=2048)
    outputs: list[LineageDataset] = Field(default_factory=list, max_length=MAX_OUTPUTS)

    @model_validator(mode="after")
    def _run_events_name_their_run(self) -> RunEvent:
        if self.event_type is not None and (self.run is None or self.job is None):
            raise ValueError(f"a RunEvent ({self.event_type}) names its 'run' and its 'job'")
        return self


class Unmapped(BaseModel):
    """An output that cannot become an event, and why (answered as REJECTED; nothing recorded)."""

    dataset: str
    reason: str


class NeedsPoll(BaseModel):
    """An output its table is polled for instead of recorded from the lineage event.

    An Iceberg output: its snapshot id alone does not place it in the table's history (Iceberg orders
    snapshots by sequence number, which no OpenLineage facet carries), so the poll records the snapshot
    with its sequence number, schema and commit time. Any output without a version (no ``version``
    facet, or one without ``datasetVersion``): the run says it committed, not what, and a poll finds out.
    """

    dataset: str
    asset_key: str
    snapshot_id: int | None = None  # the version the event reported, if any

    def why(self) -> str:
        if self.snapshot_id is None:
            return f"the event reports no version of {self.asset_key} (no '{VERSION_FACET}' facet with datasetVersion)"
        return (
            f"{self.asset_key} is an Iceberg table: lakehook orders its snapshots by sequence number, which "
            f"OpenLineage does not report (snapshot {self.snapshot_id})"
        )


class QueuedPoll(BaseModel):
    """An output a poll was queued for (the lineage answer's POLL_QUEUED): why, and what the poll records."""

    model_config = ConfigDict(frozen=True)

    asset_key: str
    reason: str


def asset_key_for(dataset: LineageDataset, mappings: list[LineageMapping]) -> str | None:
    """The dataset's asset key: the mappings on its own name, then on each symlink; then the default on each."""
    names = dataset.names()
    for namespace, name in names:
        for mapping in mappings:
            key = mapping.asset_key(namespace, name)
            if key is not None:
                return key
    for namespace, name in names:
        key = _default_key(namespace, name)
        if key is not None:
            return key
    return None


def _default_key(namespace: str, name: str) -> str | None:
    scheme, sep, catalog = namespace.partition("://")
    if sep and scheme in TABLE_FORMATS and catalog and "/" not in catalog.strip("/"):
        rest = _path(name)
        return f"{scheme}://{catalog.strip('/')}/{rest}" if rest else None
    return None


def snapshot_events(event: RunEvent, mappings: list[LineageMapping]) -> list[dict[str, Any] | Unmapped | NeedsPoll]:
    """One raw SNAPSHOT_COMMITTED event per output of a COMPLETE run, or why an output cannot be one.

    The raw events go through ingest like pushed ones: validated there, deduplicated by (asset, version),
    so the same snapshot seen by a push, a poll and a lineage event is one event. An Iceberg output, and
    an output that reports no version, asks for a poll of its table instead (see :class:`NeedsPoll`).
    """
    if event.event_type != COMPLETE or event.run is None or event.job is None:
        return []
    found: list[dict[str, Any] | Unmapped | NeedsPoll] = []
    for dataset in event.outputs:
        label = f"{dataset.namespace}/{dataset.name}"
        key = asset_key_for(dataset, mappings)
        if key is None:
            tried = ", ".join(repr(f"{ns}/{n}") for ns, n in dataset.names()[1:])
            also = f" nor its symlinks {tried}" if tried else ""
            found.append(Unmapped(dataset=label, reason=f"no lineageDatasets mapping covers dataset {label!r}{also}"))
            continue
        if not _reports_version(dataset):
            found.append(NeedsPoll(dataset=label, asset_key=key))
            continue
        version = _version(dataset)
        if version is None:
            found.append(
                Unmapped(
                    dataset=label,
                    reason=f"dataset {label!r} has a 'version' facet whose datasetVersion is not a non-negative "
                    "64-bit integer: no snapshot id",
                )
            )
            continue
        if key.startswith("iceberg://"):
            found.append(NeedsPoll(dataset=label, asset_key=key, snapshot_id=version))
            continue
        raw: dict[str, Any] = {
            "eventType": "SNAPSHOT_COMMITTED",
            "assetKey": key,
            "snapshotId": version,
            "commitTime": int(event.event_time.timestamp() * 1000),
            "payload": _payload(event, event.run, event.job, dataset),
        }
        try:
            partitions = subset_partitions(dataset)
        except PartitionKeyError as exc:
            found.append(Unmapped(dataset=label, reason=f"dataset {label!r}: outputFacets.{SUBSET_FACET}: {exc}"))
            continue
        if partitions is not None:
            raw["partitions"] = partitions_json(partitions)
        found.append(raw)
    return found


def _subset_partition_key(partition: object) -> str:
    """One partition of a subset facet's partition condition as a partition key: its ``dimensions`` in the order
    sent, each value as text (null: Hive's default partition)."""
    dimensions = partition.get("dimensions") if isinstance(partition, dict) else None
    if not isinstance(dimensions, dict) or not dimensions:
        raise PartitionKeyError("each partition names its dimensions: an object of field to value")
    fields = []
    for name, value in dimensions.items():
        if isinstance(value, dict | list):
            raise PartitionKeyError(f"dimension {str(name)[:40]!r} is not a scalar value")
        text = None if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        fields.append((str(name), text))
    key = format_partition_key(fields)
    if len(key) > MAX_PARTITION_KEY_LENGTH:
        raise PartitionKeyError(f"a partition key is at most {MAX_PARTITION_KEY_LENGTH} characters")
    return key


def subset_partitions(dataset: LineageDataset) -> TouchedPartitions | None:
    """The partitions an output's ``subset`` facet names (a ``partition`` condition), None without one.

    Each partition's ``dimensions`` are its fields in the order sent, each value as text (null: Hive's default
    partition). More partitions than one event holds (``MAX_TOUCHED_PARTITIONS``, or
    ``MAX_TOUCHED_PARTITION_BYTES`` of keys) is a PartitionKeyError, as a push naming them is REJECTED: none is
    dropped unsaid. Other conditions (location, compare, binary) name no partition keys and are not read."""
    facet = dataset.output_facets.get(SUBSET_FACET)
    condition = facet.get("outputCondition") if isinstance(facet, dict) else None
    if not isinstance(condition, dict) or condition.get("type") != "partition":
        return None
    listed = condition.get("partitions")
    if not isinstance(listed, list):
        raise PartitionKeyError("a partition condition's partitions is a list")
    keys = {_subset_partition_key(partition) for partition in listed}
    touched = TouchedPartitions.of(keys)
    if touched.truncated:
        size = sum(len(k.encode()) for k in keys)
        raise PartitionKeyError(
            f"names {len(keys)} partitions ({size} bytes of keys); one snapshot's event names at most "
            f"{MAX_TOUCHED_PARTITIONS} ({MAX_TOUCHED_PARTITION_BYTES} bytes of keys), as a push does: leave a commit "
            "touching more to the poll of its table, which records every partition"
        )
    return touched


def _reports_version(dataset: LineageDataset) -> bool:
    facet = dataset.facets.get(VERSION_FACET)
    return isinstance(facet, dict) and facet.get("datasetVersion") is not None


def _version(dataset: LineageDataset) -> int | None:
    facet = dataset.facets.get(VERSION_FACET)
    value = facet.get("datasetVersion") if isinstance(facet, dict) else None
    text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if not text.isdigit() or not text.isascii():
        return None
    number = int(text)
    return number if number <= MAX_LONG else None


def _path(name: str) -> str:
    return "/".join(part for part in name.replace(".", "/").split("/") if part)


def _payload(event: RunEvent, run: LineageRun, job: LineageJob, dataset: LineageDataset) -> dict[str, Any]:
    """What the lineage event said besides the version, as far as an event's payload holds it: facets that
    do not fit (or nest too deep) are listed by name only."""
    payload: dict[str, Any] = {
        "openlineage": {
            "runId": run.run_id,
            "job": f"{job.namespace}/{job.name}",
            "producer": event.producer,
            "dataset": {"namespace": dataset.namespace, "name": dataset.name},
        }
    }
    facets = {k: v for k, v in dataset.facets.items() if k != VERSION_FACET}
    facets.update({f"output.{k}": v for k, v in dataset.output_facets.items()})
    # Each facet is measured once, alone: the payload's size is the envelope's plus each kept facet's
    # ``"name":value`` and a comma, so no facet is serialized again for the next one (that was quadratic).
    budget = MAX_PAYLOAD_BYTES - 1024 - _size({"openlineage": {**payload["openlineage"], "facets": {}}})
    kept: dict[str, Any] = {}
    omitted: list[str] = []
    for name, facet in sorted(facets.items()):
        cost = _entry_size(name, facet)
        if cost is not None and cost + 1 <= budget:
            kept[name] = facet
            budget -= cost + 1
        else:
            omitted.append(name)
    if kept:
        payload["openlineage"]["facets"] = kept
    budget -= len(',"facetsOmitted":[]')
    listed: list[str] = []
    for name in omitted[:50]:  # as many of the names as fit what is left
        cost = _size(name) + 1
        if cost > budget:
            break
        listed.append(name)
        budget -= cost
    if listed:
        payload["openlineage"]["facetsOmitted"] = listed
    return payload


def _compact(value: Any) -> str:
    """Compact JSON of a parsed value (the one serializer of this module: a cost test counts its output)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def _size(value: Any) -> int:
    return len(_compact(value).encode())


def _entry_size(name: str, facet: Any) -> int | None:
    """The bytes of ``"name":facet`` in the payload's facets object, or None when it cannot be kept there
    (not JSON, or nested deeper than the payload allows: the facet sits at level 3 of the payload)."""
    if json_depth(facet) > MAX_PAYLOAD_DEPTH - 3:
        return None
    try:
        return _size(name) + 1 + _size(facet)
    except (TypeError, ValueError):
        return None
