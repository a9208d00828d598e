"""Dispatch: what a downstream run receives, the manifest that pins its inputs, how failures are judged.

- :class:`RunManifest` pins what a run reads (per input: asset, snapshot, schema, metadata location,
  watermark, interval) with the SHA-256 of its canonical JSON. It is a pure function of the claimed
  trigger, so every attempt (and a re-drive after a crash) writes byte-identical manifests.
- :class:`Invocation` is the payload every target receives, the same shape for all of them.
- :class:`Outcome` is a target's answer: STARTED, ALREADY_STARTED (the target already had a run for
  this key), RETRYABLE (timeouts, 5xx, 429, throttling) or FATAL (other 4xx, validation). An outcome
  is ``ambiguous`` when the request may have reached the target: that is confirmed with the target
  (``find_run``) before anything is sent again, never assumed.
- :class:`RetryPolicy` is exponential backoff with full jitter, with an injectable random source.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.completion import completion_path
from lakehook.domain.errors import ConflictError, LakehookError
from lakehook.domain.input_details import InputDetails, without_details
from lakehook.domain.json_form import json_form
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import PinnedInput, RunState, Trigger, Window

MANIFEST_VERSION = 1
ATTEMPT_FIELD = "attempt"
TOKEN_FIELD = "completionToken"
# Not part of what a run is: the attempt number changes per attempt, and the token is a credential that
# changes when the completion key is rotated. A target recognizes our run by the rest.
_NOT_IDENTITY = frozenset({ATTEMPT_FIELD, TOKEN_FIELD})
DETAILS_IN_FIELD = "detailsIn"
DETAILS_IN_MANIFEST = "manifest"  # the inputs' details are only in the run manifest (the payload would not fit)
DEFAULT_PAYLOAD_LIMIT = 255 * 1024  # Step Functions input, EventBridge entry, Lambda async event: 256 KiB less 1


class ManifestConflictError(ConflictError):
    """A different manifest is already stored under this trigger key."""


class ManifestIntegrityError(LakehookError):
    """A stored manifest is not the manifest its SHA-256 says it is."""


class TargetUnavailableError(LakehookError):
    """The target could not be asked (timeout, 5xx, throttled); nothing is known about the run."""


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8, no NaN: the bytes a hash is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _without_none(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _iso_window(window: Window) -> dict[str, str]:
    """A run's window as its manifest and payload carry it: ``[start, end)`` in ISO 8601 UTC."""
    return {"start": ms_to_iso(window.start), "end": ms_to_iso(window.end)}


# --- the run manifest ---------------------------------------------------------------------------


class ManifestInput(BaseModel):
    """One pinned input of a run: exactly which version of the asset it reads."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")

    asset_key: str = Field(alias="assetKey")
    snapshot_id: int | None = Field(default=None, alias="snapshotId")
    schema_id: int | None = Field(default=None, alias="schemaId")
    metadata_location: str | None = Field(default=None, alias="metadataLocation")
    watermark: int | None = None
    commit_time: int | None = Field(default=None, alias="commitTime")
    interval: dict[str, str] | None = Field(default=None, description="the window [start, end) in ISO 8601")
    # The pinned version's event (lakehook.domain.input_details): absent in a manifest of 0.1.0, or when not recorded.
    commit_kind: str | None = Field(default=None, alias="commitKind")
    data_changed: bool | None = Field(default=None, alias="dataChanged")
    total_record_count: int | None = Field(default=None, alias="totalRecordCount")
    delta_record_count: int | None = Field(default=None, alias="deltaRecordCount")
    changelog_record_count: int | None = Field(default=None, alias="changelogRecordCount")
    partitions: dict[str, Any] | None = None
    payload: dict[str, Any] | None = None

    @classmethod
    def of(
        cls, pin: PinnedInput, interval: dict[str, str] | None, details: InputDetails | None = None
    ) -> ManifestInput:
        # The metadata location is taken from the pin (never from live state: the manifest must be
        # the same on every attempt).
        facts = details.model_dump() if details is not None else {}
        return cls(
            asset_key=pin.asset_key,
            snapshot_id=pin.snapshot_id,
            schema_id=pin.schema_id,
            metadata_location=pin.metadata_location,
            watermark=pin.watermark,
            commit_time=pin.commit_time,
            interval=interval,
            **facts,
        )

    def bare(self) -> ManifestInput:
        """The input without the details of its event (what a manifest written without them holds)."""
        return ManifestInput.model_validate(without_details(self.model_dump(by_alias=True)))

    @property
    def has_details(self) -> bool:
        return self != self.bare()


class RunManifest(BaseModel):
    """What a run read, pinned: stored once per trigger key; a replay re-uses it."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")

    manifest_version: int = Field(default=MANIFEST_VERSION, alias="manifestVersion")
    trigger_key: str = Field(alias="triggerKey")
    rule_id: str = Field(alias="ruleId")
    group_id: str = Field(alias="groupId")
    replay_epoch: int = Field(default=0, alias="replayEpoch")
    replay_of: str | None = Field(default=None, alias="replayOf")
    created_at: str = Field(alias="createdAt", description="when the trigger was claimed (ISO 8601 UTC)")
    window: dict[str, str] | None = None
    partition: str | None = Field(default=None, description="a partitioned group's run: the partition key it read")
    inputs: tuple[ManifestInput, ...]

    @classmethod
    def for_trigger(
        cls, trigger: Trigger, replay_of: str | None = None, details: Sequence[InputDetails | None] = ()
    ) -> RunManifest:
        """The manifest of a claimed trigger: a function of the claim and its pinned versions' events (``details``,
        one per input in order, :func:`lakehook.domain.input_details.details_of`), identical on every attempt."""
        window = _iso_window(trigger.window) if trigger.window is not None else None
        facts = list(details) + [None] * (len(trigger.inputs) - len(details))
        return cls(
            trigger_key=trigger.trigger_key,
            rule_id=trigger.rule_id,
            group_id=trigger.group_id,
            replay_epoch=trigger.replay_epoch,
            replay_of=replay_of,
            created_at=ms_to_iso(trigger.created_at),
            window=window,
            partition=trigger.partition,
            inputs=tuple(ManifestInput.of(p, window, d) for p, d in zip(trigger.inputs, facts, strict=True)),
        )

    def bare(self) -> RunManifest:
        """The manifest without its inputs' details: two manifests of one claim agree on it whatever events they
        read (one written before an upgrade, or after an event expired)."""
        return self.model_copy(update={"inputs": tuple(i.bare() for i in self.inputs)})

    def body(self) -> dict[str, Any]:
        data = _without_none(self.model_dump(by_alias=True, exclude={"inputs"}))
        data["inputs"] = [json_form(i) for i in self.inputs]
        return data

    def canonical(self) -> bytes:
        """The canonical JSON of the manifest (without its hash)."""
        return canonical_json(self.body())

    @property
    def sha256(self) -> str:
        return sha256_hex(self.canonical())

    def document(self) -> bytes:
        """What is stored: the manifest plus ``sha256`` of its canonical JSON, canonical itself."""
        return canonical_json({**self.body(), "sha256": self.sha256})

    @classmethod
    def from_document(cls, data: bytes) -> RunManifest:
        """Parse a stored manifest; raises ManifestIntegrityError unless its hash matches its content."""
        try:
            raw = json.loads(data)
            claimed = raw.pop("sha256")
            manifest = cls.model_validate(raw)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ManifestIntegrityError(f"not a run manifest: {exc}") from exc
        if manifest.sha256 != claimed:
            raise ManifestIntegrityError(f"manifest of {manifest.trigger_key!r} does not match its sha256")
        return manifest


# --- the invocation payload ------------------------------------------------------------------------


class Invocation(BaseModel):
    """What every target receives (DESIGN.md, "Invocation payload").

    ``completionToken`` lets the run report its end (``completionPath``) without credentials of its own;
    it is a credential, so it travels only in the invocation, never in the run manifest.
    """

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")

    trigger_key: str = Field(alias="triggerKey")
    rule_id: str = Field(alias="ruleId")
    group_id: str = Field(alias="groupId")
    inputs: tuple[ManifestInput, ...]
    window: dict[str, str] | None = None
    partition: str | None = None
    manifest_uri: str = Field(alias="manifestUri")
    replay_of: str | None = Field(default=None, alias="replayOf")
    attempt: int = Field(ge=1)
    completion_token: str | None = Field(default=None, alias="completionToken", repr=False)
    start_from: str | None = Field(default=None, alias="startFrom", description="a replay's choice")
    variables: dict[str, Any] | None = Field(default=None, description="a replay's choice")
    details_in_manifest: bool = Field(
        default=False, description="the inputs' details were left out to fit the target's limit: read the manifest"
    )

    @classmethod
    def of(
        cls,
        trigger: Trigger,
        manifest: RunManifest,
        manifest_uri: str,
        attempt: int,
        replay_of: str | None = None,
        completion_token: str | None = None,
    ) -> Invocation:
        """The payload of one attempt. The inputs come from the manifest, which a replay shares with the
        trigger it replays; the key is always this trigger's own."""
        if replay_of is None and manifest.trigger_key != trigger.trigger_key:
            replay_of = manifest.trigger_key
        return cls(
            trigger_key=trigger.trigger_key,
            rule_id=trigger.rule_id,
            group_id=trigger.group_id,
            inputs=manifest.inputs,
            window=manifest.window,
            partition=manifest.partition,
            manifest_uri=manifest_uri,
            replay_of=replay_of if replay_of is not None else manifest.replay_of,
            attempt=attempt,
            completion_token=completion_token,
            start_from=trigger.start_from,  # stored with the claim: every attempt sends the same choices
            variables=trigger.variables,
        )

    def payload(self) -> dict[str, Any]:
        """The JSON object sent: ``triggerKey, ruleId, groupId, inputs, window, manifestUri, replayOf, attempt,
        completionPath, completionToken``, ``partition`` for a partitioned group's run, and a replay's choices
        ``startFrom`` and ``variables`` when it made them (a run without them gets the payload it always got)."""
        made = {
            "partition": self.partition,
            "startFrom": self.start_from,
            "variables": self.variables,
            DETAILS_IN_FIELD: DETAILS_IN_MANIFEST if self.details_in_manifest else None,
        }
        extra = {name: value for name, value in made.items() if value is not None}
        return {
            **extra,
            "triggerKey": self.trigger_key,
            "ruleId": self.rule_id,
            "groupId": self.group_id,
            "inputs": [json_form(i) for i in self.inputs],
            "window": self.window,
            "manifestUri": self.manifest_uri,
            "replayOf": self.replay_of,
            ATTEMPT_FIELD: self.attempt,
            "completionPath": completion_path(self.trigger_key),
            TOKEN_FIELD: self.completion_token,
        }

    def body(self) -> bytes:
        return canonical_json(self.payload())

    def fitted(self, limit_bytes: int, quoted: bool = False) -> Invocation:
        """This invocation; or, when its payload could exceed ``limit_bytes`` (a target's largest input), the same
        without the inputs' details and with ``detailsIn: "manifest"``: the details are in the manifest, and the run
        starts all the same. Decided on the payload at its largest (any attempt number, every non-ASCII character
        escaped; ``quoted``: as a JSON string inside the target's own JSON request, its quotes and backslashes
        escaped once more), so every attempt of a trigger decides alike."""
        if not any(i.has_details for i in self.inputs) or largest_size(self.payload(), quoted) <= limit_bytes:
            return self
        return self.model_copy(update={"inputs": tuple(i.bare() for i in self.inputs), "details_in_manifest": True})

    def identity(self) -> str:
        """The hash of the payload without ``attempt``: the same for every attempt of one trigger."""
        return payload_identity(self.payload())


def largest_size(payload: Mapping[str, Any], quoted: bool = False) -> int:
    """The payload's size in bytes as any target may send it: JSON with every non-ASCII character escaped (never
    shorter than its UTF-8), and an attempt number of ten digits; ``quoted``: that JSON as a string literal inside
    another JSON document (an environment variable's value in ECS's or Batch's request), its escapes included."""
    text = json.dumps({**payload, ATTEMPT_FIELD: 10**9}, separators=(",", ":"), allow_nan=False)
    return len(json.dumps(text)) if quoted else len(text)


def payload_identity(payload: Mapping[str, Any]) -> str:
    """SHA-256 of a payload's canonical JSON without ``attempt`` and ``completionToken`` (how a target
    recognizes our own run, across attempts and completion-key rotations)."""
    return sha256_hex(canonical_json({k: v for k, v in payload.items() if k not in _NOT_IDENTITY}))


# --- outcomes ------------------------------------------------------------------------------------


class OutcomeKind(StrEnum):
    STARTED = "STARTED"  # this request started the run
    ALREADY_STARTED = "ALREADY_STARTED"  # the target already had a run for this key: ours, earlier
    RETRYABLE = "RETRYABLE"  # timeout, 5xx, 429, throttling: try again after confirming
    FATAL = "FATAL"  # refused for good (other 4xx, validation, missing resource)


@dataclass(frozen=True)
class Outcome:
    """A target's answer to one start request.

    ``code`` is short and low-cardinality (a metric dimension); ``reason`` is for people.
    ``ambiguous``: the request may have reached the target, so a run may exist.
    ``retry_window_seconds``: a RETRYABLE answer that is worth retrying only for this long after it was
    first seen (Airflow's 404 for a DAG still being deployed), then FINAL; it is retried by re-drives only.
    ``run_state``: what the target said about a started run (e.g. queued behind a paused DAG).
    """

    kind: OutcomeKind
    run_id: str | None = None
    reason: str | None = None
    code: str | None = None
    ambiguous: bool = False
    retry_after_seconds: float | None = None
    retry_window_seconds: float | None = None
    run_state: RunState | None = None

    @classmethod
    def started(cls, run_id: str, run_state: RunState | None = None) -> Outcome:
        return cls(OutcomeKind.STARTED, run_id=run_id, run_state=run_state)

    @classmethod
    def already_started(cls, run_id: str, run_state: RunState | None = None) -> Outcome:
        return cls(OutcomeKind.ALREADY_STARTED, run_id=run_id, run_state=run_state)

    @classmethod
    def retryable(
        cls,
        reason: str,
        code: str,
        ambiguous: bool = False,
        retry_after_seconds: float | None = None,
        retry_window_seconds: float | None = None,
    ) -> Outcome:
        return cls(
            OutcomeKind.RETRYABLE,
            reason=reason,
            code=code,
            ambiguous=ambiguous,
            retry_after_seconds=retry_after_seconds,
            retry_window_seconds=retry_window_seconds,
        )

    @classmethod
    def fatal(cls, reason: str, code: str) -> Outcome:
        return cls(OutcomeKind.FATAL, reason=reason, code=code)

    @property
    def succeeded(self) -> bool:
        return self.kind in (OutcomeKind.STARTED, OutcomeKind.ALREADY_STARTED)


RETRYABLE_HTTP = frozenset({408, 425, 429})


def classify_http_status(status: int) -> OutcomeKind:
    """2xx started; 409 already started; 408, 425, 429 and 5xx retryable; anything else fatal."""
    if 200 <= status < 300:
        return OutcomeKind.STARTED
    if status == 409:
        return OutcomeKind.ALREADY_STARTED
    if status in RETRYABLE_HTTP or 500 <= status < 600:
        return OutcomeKind.RETRYABLE
    return OutcomeKind.FATAL


def http_outcome(status: int, run_id: str, detail: str, retry_after: str | None = None) -> Outcome:
    """The outcome of an HTTP answer by its status (see :func:`classify_http_status`).

    A 5xx is ambiguous (the server may have acted before failing); 408/425/429 are not.
    """
    kind = classify_http_status(status)
    if kind is OutcomeKind.STARTED:
        return Outcome.started(run_id)
    if kind is OutcomeKind.ALREADY_STARTED:
        return Outcome.already_started(run_id)
    code = "throttled" if status == 429 else f"http_{status}"
    text = f"HTTP {status}: {detail[:300]}" if detail else f"HTTP {status}"
    if kind is OutcomeKind.RETRYABLE:
        wait = parse_retry_after(retry_after)
        return Outcome.retryable(text, code, ambiguous=status >= 500, retry_after_seconds=wait)
    return Outcome.fatal(text, code)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the delta form; an HTTP date is ignored)."""
    if value is None:
        return None
    text = value.strip()
    return float(text) if text.isascii() and text.isdigit() else None


# --- retries ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: attempt ``n`` waits ``uniform(0, min(cap, base * 2**(n-1)))``.

    ``max_attempts`` bounds the attempts this policy allows in total.
    """

    max_attempts: int = 3
    base_delay_seconds: float = 0.5
    max_delay_seconds: float = 8.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay_seconds < 0 or self.max_delay_seconds < self.base_delay_seconds:
            raise ValueError("delays must satisfy 0 <= base <= max")

    def ceiling(self, attempt: int) -> float:
        """The longest wait after failed attempt number ``attempt`` (1-based)."""
        exponent = min(max(attempt - 1, 0), 62)  # 2**62 is already past any cap
        return float(min(self.max_delay_seconds, self.base_delay_seconds * (2**exponent)))

    def delay(self, attempt: int, rand: Callable[[], float], at_least: float | None = None) -> float:
        """The wait after failed attempt ``attempt``: full jitter, but no less than ``at_least``
        (a target's Retry-After), still capped by ``max_delay_seconds``."""
        wait = self.ceiling(attempt) * min(max(rand(), 0.0), 1.0)
        if at_least is not None:
            wait = max(wait, min(at_least, self.max_delay_seconds))
        return wait

    def exhausted(self, attempts: int) -> bool:
        return attempts >= self.max_attempts
