"""The invocation payload as typed objects: what a run receives from lakehook, whatever the target.

Every target sends the same JSON object (docs/targets.md): ``triggerKey, ruleId, groupId, inputs, window,
manifestUri, replayOf, attempt, completionPath, completionToken``, ``partition`` for the run of one partition of
a group with ``partitionBy`` (docs/partitions.md), each input's event details (``commitKind``, record counts,
``partitions``, ``payload``; ``detailsIn: "manifest"`` when they did not fit the target), and a replay's choices
``startFrom`` and ``variables`` when it made them (docs/targets.md, "Replay choices"). A webhook gets it as the
POST body, a Step Functions execution as its input, a Lambda function as its event, EventBridge as ``detail``, an
Airflow DAG run as ``conf``, a DolphinScheduler workflow as the start parameter ``lakehook_payload``. The helpers
here take each of those and answer one :class:`Invocation`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakehook.wire.commit_properties import commit_properties
from lakehook.wire.partition_keys import PartitionKeyError, partition_fields


class InvalidPayloadError(ValueError):
    """The data is not a lakehook invocation payload; the message names the field."""


@dataclass(frozen=True)
class Interval:
    """A window ``[start, end)``, ISO 8601 in UTC."""

    start: str
    end: str


@dataclass(frozen=True)
class PinnedInput:
    """One input of the run, pinned: read exactly this version of the asset."""

    asset_key: str
    snapshot_id: int | None = None
    schema_id: int | None = None
    metadata_location: str | None = None  # Iceberg: the metadata.json of the pinned snapshot
    watermark: int | None = None  # epoch milliseconds
    commit_time: int | None = None  # epoch milliseconds
    interval: Interval | None = None
    # The pinned version's event (docs/targets.md): its commit facts and the producer's payload; None when not known,
    # or when the payload would not fit the target (``Invocation.details_in_manifest``: read the run manifest).
    commit_kind: str | None = None  # APPEND, OVERWRITE, DELETE, COMPACT, … as the format names it
    data_changed: bool | None = None
    total_record_count: int | None = None
    delta_record_count: int | None = None  # added minus deleted rows
    changelog_record_count: int | None = None
    partitions: Mapping[str, Any] | None = None  # {keys, count, truncated}: the partitions the commit touched
    payload: Mapping[str, Any] | None = None  # what the producer sent with the event


@dataclass(frozen=True)
class Invocation:
    """What one attempt of one trigger delivers. ``trigger_key`` is the same on every attempt (deduplicate on
    it); ``attempt`` is not. ``completion_token`` is a credential for this trigger's completion only.
    ``partition``: the partition key a partitioned group's run is for (``dt=2026-12-01/region=eu``), else None;
    :attr:`partition_values` reads it. ``start_from`` and ``variables``: a replay's choices, where the rerun starts
    (a task or step name; None: from the start) and the variables it overrides (empty: none)."""

    trigger_key: str
    rule_id: str
    group_id: str
    inputs: tuple[PinnedInput, ...]
    manifest_uri: str
    attempt: int
    completion_path: str
    completion_token: str | None = field(default=None, repr=False)
    window: Interval | None = None
    replay_of: str | None = None
    partition: str | None = None
    start_from: str | None = None
    variables: Mapping[str, str | int | float | bool | None] = field(default_factory=dict)
    details_in_manifest: bool = False  # the inputs' details did not fit the target: they are in the run manifest
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def input(self, asset_key: str) -> PinnedInput:
        """The pinned input of ``asset_key``; KeyError when the run has none."""
        for pinned in self.inputs:
            if pinned.asset_key == asset_key:
                return pinned
        raise KeyError(asset_key)

    @property
    def commit_properties(self) -> dict[str, str]:
        """What the run sets on each commit to an outlet table so that the commit confirms this trigger:
        ``{"lakehook.trigger-key": <key>}``, for pyiceberg's and pypaimon's ``snapshot_properties`` and deltalake's
        ``CommitProperties(custom_metadata=...)`` (docs/targets.md#confirmed-by-the-data)."""
        return commit_properties(self.trigger_key)

    @property
    def is_replay(self) -> bool:
        return self.replay_of is not None

    @property
    def partition_values(self) -> dict[str, str | None]:
        """The partition's fields and values, unescaped, in the key's order (``{"dt": "2026-12-01", "region":
        "eu"}``); None for Hive's default partition (a null value). Empty when the run is not of a partition."""
        return dict(partition_fields(self.partition)) if self.partition is not None else {}


def _field(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
    value = data.get(name)
    if value is None:
        if required:
            raise InvalidPayloadError(f"{name} is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, kind):
        raise InvalidPayloadError(f"{name} must be {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({str: "a string", int: "an integer", dict: "an object", list: "an array"}[k] for k in kinds)


def _interval(value: Any, name: str) -> Interval | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidPayloadError(f"{name} must be an object with start and end")
    return Interval(start=_field(value, "start", str), end=_field(value, "end", str))


def _pinned(value: Any, index: int) -> PinnedInput:
    if not isinstance(value, Mapping):
        raise InvalidPayloadError(f"inputs[{index}] must be an object")
    try:
        return PinnedInput(
            asset_key=_field(value, "assetKey", str),
            snapshot_id=_field(value, "snapshotId", int, required=False),
            schema_id=_field(value, "schemaId", int, required=False),
            metadata_location=_field(value, "metadataLocation", str, required=False),
            watermark=_field(value, "watermark", int, required=False),
            commit_time=_field(value, "commitTime", int, required=False),
            interval=_interval(value.get("interval"), "interval"),
            **_details(value),
        )
    except InvalidPayloadError as exc:
        raise InvalidPayloadError(f"inputs[{index}].{exc}") from None


def _details(value: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned version's event details an input carries (each optional)."""
    flag = value.get("dataChanged")
    if flag is not None and not isinstance(flag, bool):
        raise InvalidPayloadError("dataChanged must be a boolean")
    return {
        "commit_kind": _field(value, "commitKind", str, required=False),
        "data_changed": flag,
        "total_record_count": _field(value, "totalRecordCount", int, required=False),
        "delta_record_count": _field(value, "deltaRecordCount", int, required=False),
        "changelog_record_count": _field(value, "changelogRecordCount", int, required=False),
        "partitions": _field(value, "partitions", dict, required=False),
        "payload": _field(value, "payload", dict, required=False),
    }


def _partition(data: Mapping[str, Any]) -> str | None:
    key: str | None = _field(data, "partition", str, required=False)
    if key is not None:
        try:
            partition_fields(key)
        except PartitionKeyError as exc:
            raise InvalidPayloadError(f"partition: {exc}") from None
    return key


def _variables(value: Any) -> dict[str, str | int | float | bool | None]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidPayloadError("variables must be an object")
    for name, scalar in value.items():
        if not isinstance(scalar, str | int | float | bool | None):
            raise InvalidPayloadError(f"variables.{name} must be a JSON scalar")
    return dict(value)


def _details_in(data: Mapping[str, Any]) -> bool:
    where = _field(data, "detailsIn", str, required=False)
    if where not in (None, "manifest"):
        raise InvalidPayloadError('detailsIn must be "manifest" when present')
    return where is not None


def parse_invocation(data: bytes | str | Mapping[str, Any]) -> Invocation:
    """The invocation in a webhook body (bytes or text) or an already decoded object (Step Functions input,
    a Lambda event, Airflow's ``conf``). Raises InvalidPayloadError naming the field."""
    if isinstance(data, bytes | str):
        try:
            data = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidPayloadError(f"not JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise InvalidPayloadError("the payload must be a JSON object")
    inputs = _field(data, "inputs", list)
    attempt = _field(data, "attempt", int)
    if attempt < 1:
        raise InvalidPayloadError("attempt must be at least 1")
    key = _field(data, "triggerKey", str)
    return Invocation(
        trigger_key=key,
        rule_id=_field(data, "ruleId", str),
        group_id=_field(data, "groupId", str),
        inputs=tuple(_pinned(value, index) for index, value in enumerate(inputs)),
        manifest_uri=_field(data, "manifestUri", str),
        attempt=attempt,
        completion_path=_field(data, "completionPath", str, required=False) or f"/runs/{key}/complete",
        completion_token=_field(data, "completionToken", str, required=False),
        window=_interval(data.get("window"), "window"),
        replay_of=_field(data, "replayOf", str, required=False),
        partition=_partition(data),
        start_from=_field(data, "startFrom", str, required=False),
        variables=_variables(data.get("variables")),
        details_in_manifest=_details_in(data),
        raw=dict(data),
    )


def from_eventbridge_event(event: Mapping[str, Any]) -> Invocation:
    """The invocation an EventBridge event carries as ``detail`` (a rule's target gets the whole event)."""
    detail = event.get("detail") if isinstance(event, Mapping) else None
    if not isinstance(detail, Mapping):
        raise InvalidPayloadError("detail is missing: not an EventBridge event from lakehook")
    return parse_invocation(detail)


def from_dolphinscheduler_params(params: Mapping[str, Any]) -> Invocation:
    """The invocation a DolphinScheduler workflow received as the start parameter ``lakehook_payload``."""
    payload = params.get("lakehook_payload") if isinstance(params, Mapping) else None
    if not isinstance(payload, str):
        raise InvalidPayloadError("lakehook_payload is missing (declare it as an IN global parameter)")
    return parse_invocation(payload)


JOB_PAYLOAD_ARGUMENT = "--lakehook_payload"


def from_job_arguments(argv: Sequence[str]) -> Invocation:
    """The invocation a job received among its command-line arguments (a Glue job's ``sys.argv``): the value after
    ``--lakehook_payload`` (or of ``--lakehook_payload=<json>``)."""
    for at, word in enumerate(argv):
        if word == JOB_PAYLOAD_ARGUMENT and at + 1 < len(argv):
            return parse_invocation(argv[at + 1])
        if word.startswith(JOB_PAYLOAD_ARGUMENT + "="):
            return parse_invocation(word.partition("=")[2])
    raise InvalidPayloadError(f"{JOB_PAYLOAD_ARGUMENT} is missing from the job's arguments")


ENVIRONMENT_PAYLOAD = "LAKEHOOK_PAYLOAD"


def from_environment(environ: Mapping[str, str]) -> Invocation:
    """The invocation a container run received in its environment (AWS Batch, ECS): ``LAKEHOOK_PAYLOAD``."""
    payload = environ.get(ENVIRONMENT_PAYLOAD)
    if not payload:
        raise InvalidPayloadError(f"{ENVIRONMENT_PAYLOAD} is missing from the environment")
    return parse_invocation(payload)
