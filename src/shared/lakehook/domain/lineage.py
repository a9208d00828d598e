"""OpenLineage RunEvents as evidence: a completed run's output datasets become snapshot events.

Jobs that already emit OpenLineage (Spark, Airflow, dbt, Flink integrations) need no lakehook code: their
HTTP transport posts RunEvents to ``POST /api/v1/lineage``. Only a ``COMPLETE`` event says data was
committed; each of its outputs names a dataset (namespace + name) and, where the integration reports it,
the version it wrote (the ``version`` dataset facet: Spark's Iceberg integration reports the snapshot id,
Delta the table version). A dataset becomes an asset key through the producer's ``lineageDatasets``
mappings, first match wins, or by the default: a namespace that is itself ``<format>://<catalog>``
(``iceberg``, ``paimon``, ``delta``, ``hudi``) gives ``<namespace>/<name with '.' as '/'>``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lakehook.domain.json_input import json_depth
from lakehook.domain.limits import MAX_LONG, MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH

TABLE_FORMATS = ("iceberg", "paimon", "delta", "hudi")
COMPLETE = "COMPLETE"
VERSION_FACET = "version"  # DatasetVersionDatasetFacet: {"datasetVersion": "..."}
MAX_OUTPUTS = 100


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

    namespace: str = Field(min_length=1, max_length=1024)
    name: str = Field(min_length=1, max_length=1024)
    facets: dict[str, Any] = Field(default_factory=dict)
    output_facets: dict[str, Any] = Field(default_factory=dict, alias="outputFacets")


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
    """An Iceberg output: its snapshot id alone does not place it in the table's history (Iceberg orders
    snapshots by sequence number, which no OpenLineage facet carries), so the table is polled instead and
    the poll records the snapshot with its sequence number, schema and commit time."""

    dataset: str
    asset_key: str
    snapshot_id: int


def asset_key_for(dataset: LineageDataset, mappings: list[LineageMapping]) -> str | None:
    for mapping in mappings:
        key = mapping.asset_key(dataset.namespace, dataset.name)
        if key is not None:
            return key
    scheme, sep, catalog = dataset.namespace.partition("://")
    if sep and scheme in TABLE_FORMATS and catalog and "/" not in catalog.strip("/"):
        rest = _path(dataset.name)
        return f"{scheme}://{catalog.strip('/')}/{rest}" if rest else None
    return None


def snapshot_events(event: RunEvent, mappings: list[LineageMapping]) -> list[dict[str, Any] | Unmapped | NeedsPoll]:
    """One raw SNAPSHOT_COMMITTED event per output of a COMPLETE run, or why an output cannot be one.

    The raw events go through ingest like pushed ones: validated there, deduplicated by (asset, version),
    so the same snapshot seen by a push, a poll and a lineage event is one event. An Iceberg output asks for
    a poll of its table instead (see :class:`NeedsPoll`).
    """
    if event.event_type != COMPLETE or event.run is None or event.job is None:
        return []
    found: list[dict[str, Any] | Unmapped | NeedsPoll] = []
    for dataset in event.outputs:
        label = f"{dataset.namespace}/{dataset.name}"
        key = asset_key_for(dataset, mappings)
        if key is None:
            found.append(Unmapped(dataset=label, reason=f"no lineageDatasets mapping covers dataset {label!r}"))
            continue
        version = _version(dataset)
        if version is None:
            found.append(
                Unmapped(
                    dataset=label,
                    reason=f"dataset {label!r} has no integer 'version' facet (datasetVersion): no snapshot id",
                )
            )
            continue
        if key.startswith("iceberg://"):
            found.append(NeedsPoll(dataset=label, asset_key=key, snapshot_id=version))
            continue
        found.append(
            {
                "eventType": "SNAPSHOT_COMMITTED",
                "assetKey": key,
                "snapshotId": version,
                "commitTime": int(event.event_time.timestamp() * 1000),
                "payload": _payload(event, event.run, event.job, dataset),
            }
        )
    return found


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
    kept: dict[str, Any] = {}
    omitted: list[str] = []
    for name, facet in sorted(facets.items()):
        trial = {**payload["openlineage"], "facets": {**kept, name: facet}}
        if _fits({"openlineage": trial}):
            kept[name] = facet
        else:
            omitted.append(name)
    if kept:
        payload["openlineage"]["facets"] = kept
    if omitted:
        payload["openlineage"]["facetsOmitted"] = omitted[:50]
    return payload


def _fits(payload: dict[str, Any]) -> bool:
    try:
        text = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return False
    return len(text.encode()) <= MAX_PAYLOAD_BYTES - 1024 and json_depth(payload) <= MAX_PAYLOAD_DEPTH
