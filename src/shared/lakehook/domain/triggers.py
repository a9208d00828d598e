"""Triggers: one firing of a rule's group, its pinned inputs, its key, and the group's cursor.

The trigger key is derived from (rule, group, the pinned version of every member, window,
replay epoch), so every resolver that sees the same versions derives the same key, and one
conditional write decides who claims it. The group cursor records the versions the group last
triggered with; a claim moves it in the same transaction, conditional on it being unchanged,
so versions pinned by a group never go backwards.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.confirmation import Confirmation, ConfirmationState
from lakehook.domain.errors import ConflictError

KEY_HASH_CHARS = 24  # 96 bits of SHA-256: collisions are not a practical concern


class TriggerStatus(StrEnum):
    TRIGGERING = "TRIGGERING"  # claimed; the dispatcher starts the run
    SUCCEEDED = "SUCCEEDED"  # the target confirmed the run
    FAILED = "FAILED"  # the target refused; the compensator may re-drive it
    SKIPPED = "SKIPPED"  # claimed without a run: versions a backfill committed (policy.backfill=SKIP)


class FailureKind(StrEnum):
    """What a FAILED trigger is waiting for."""

    RETRYABLE = "RETRYABLE"  # the compensator tries again by itself at ``nextAttemptAt``
    FINAL = "FINAL"  # nothing happens by itself: fix the cause, then ``POST /triggers/{key}/retry``


class TriggerNotRetryableError(ConflictError):
    """Only a FAILED trigger can be retried: this one is TRIGGERING, SUCCEEDED or SKIPPED."""

    def __init__(self, trigger_key: str, status: TriggerStatus) -> None:
        hint = {
            TriggerStatus.TRIGGERING: "it is being dispatched now",
            TriggerStatus.SUCCEEDED: "its run already started (replay it to run it again)",
            TriggerStatus.SKIPPED: "it was skipped (a backfill's versions) and has no run",
        }.get(status, "only FAILED triggers can be retried")
        super().__init__(f"trigger {trigger_key!r} is {status.value}: {hint}")
        self.trigger_key = trigger_key
        self.status = status


MAX_RUN_STATE_DETAIL = 500


class RunState(BaseModel):
    """What the target said about the run when the dispatcher last asked (e.g. Airflow: ``queued``, and
    that the DAG is paused). Not the run's own report, which is ``runStatus`` (run completion)."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    state: str = Field(min_length=1, max_length=64, description="the target's own word for the run's state")
    detail: str | None = Field(default=None, max_length=MAX_RUN_STATE_DETAIL, description="why, for people")
    checked_at: int = Field(alias="checkedAt", description="when the target was asked (epoch ms)")

    @property
    def waiting(self) -> bool:
        """Whether the run has not ended yet by the target's word, so asking again can tell more."""
        return self.state in WAITING_RUN_STATES


# The target's words for a run that has not ended (Airflow's DagRunState: queued, running).
WAITING_RUN_STATES = frozenset({"queued", "running"})


class SlotWait(BaseModel):
    """A claimed trigger held back by its rule's ``maxInFlight``: since when, and (when read with its scope's slots)
    its place in the queue and how many runs are in flight."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    since: int = Field(description="when it began waiting (epoch ms)")
    position: int | None = Field(default=None, description="its 1-based place in the queue, in claim order")
    in_flight: int | None = Field(default=None, alias="inFlight")
    max_in_flight: int | None = Field(default=None, alias="maxInFlight")


class PinnedInput(BaseModel):
    """The version of one member a trigger pins, and what is known about it."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    asset_key: str = Field(alias="assetKey")
    snapshot_id: int | None = Field(default=None, alias="snapshotId")
    snapshot_order: int | None = Field(
        default=None,
        alias="snapshotOrder",
        description="its place in history when not the id (Iceberg: sequence number)",
    )
    schema_id: int | None = Field(default=None, alias="schemaId")
    watermark: int | None = None
    commit_time: int | None = Field(default=None, alias="commitTime")
    state_version: int = Field(default=0, alias="stateVersion", description="the asset state version it was read at")
    manifest_uri: str | None = Field(
        default=None, alias="manifestUri", description="the verified, sealed spool manifest a manifest member read"
    )
    manifest_sha256: str | None = Field(
        default=None,
        alias="manifestSha256",
        description="the SHA-256 of that manifest as verified; a replay refuses a manifest rewritten since",
    )
    metadata_location: str | None = Field(
        default=None, alias="metadataLocation", description="Iceberg: the metadata.json that holds the snapshot"
    )
    tag: str | None = Field(default=None, description="the tag a tag member pinned")

    @property
    def ordinal(self) -> tuple[int, int]:
        """The version's place in the asset's order: the snapshot, or the watermark of a snapshot-less asset."""
        if self.snapshot_id is not None:
            return (self.snapshot_order if self.snapshot_order is not None else self.snapshot_id, -1)
        if self.tag is not None:
            return (-1, -1)  # a tag that named no snapshot: the tag itself is the version
        return (-1, self.watermark if self.watermark is not None else -1)

    def identity(self) -> list[Any]:
        """What of the pin goes into the trigger key: the asset and its version, nothing incidental.

        A sealed spool manifest is a version of its own: a new one is a new combination of inputs; so is a tag.
        """
        if self.snapshot_id is not None:
            version: list[Any] = [self.asset_key, self.snapshot_id, -1]
        elif self.tag is not None:
            version = [self.asset_key, -1, -1]
        else:
            version = [self.asset_key, -1, self.watermark if self.watermark is not None else -1]
        if self.tag is not None:
            version.append(f"tag:{self.tag}")
        return version if self.manifest_uri is None else [*version, self.manifest_uri]


class Window(BaseModel):
    """A window ``[start, end)`` in epoch milliseconds; one trigger per window."""

    model_config = ConfigDict(frozen=True)

    start: int
    end: int


def trigger_key(
    rule_id: str,
    group_id: str,
    pins: list[PinnedInput] | tuple[PinnedInput, ...],
    window: Window | None,
    replay_epoch: int,
    marker: str | None = None,
    partition: str | None = None,
) -> str:
    """``<ruleId>.<groupId>.<hash>``: readable, one URL path segment, the same for the same versions.

    Ids are letters, digits, ``_``, ``-`` and ``.`` only, so the key never holds ``/``. A ``marker``
    (``start``, ``manual-1``) opens a key space of its own, shown in the key: ``<ruleId>.<groupId>.<marker>.<hash>``.
    A ``partition`` (a partitioned group's run of one partition key) is part of what is hashed.
    """
    fields: dict[str, Any] = {
        "rule": rule_id,
        "group": group_id,
        "pins": sorted(p.identity() for p in pins),
        "window": [window.start, window.end] if window else None,
        "epoch": replay_epoch,
    }
    if marker is not None:
        fields["marker"] = marker
    if partition is not None:  # a partitioned group's run of one partition (absent otherwise: keys stay as they were)
        fields["partition"] = partition
    canonical = json.dumps(fields, separators=(",", ":"), sort_keys=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:KEY_HASH_CHARS]
    return f"{rule_id}.{group_id}.{digest}" if marker is None else f"{rule_id}.{group_id}.{marker}.{digest}"


class Trigger(BaseModel):
    """One claimed firing of a group."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    trigger_key: str = Field(alias="triggerKey")
    rule_id: str = Field(alias="ruleId")
    group_id: str = Field(alias="groupId")
    status: TriggerStatus = TriggerStatus.TRIGGERING
    inputs: tuple[PinnedInput, ...]
    window: Window | None = None
    partition: str | None = Field(default=None, description="a partitioned group's run: the partition key it ran for")
    in_order: bool = Field(
        default=False,
        alias="inOrder",
        description="an EACH_VERSION partition's run: the partition's next version waits for it to succeed",
    )
    replay_epoch: int = Field(default=0, alias="replayEpoch")
    sequence: int = Field(default=0, description="the group cursor's sequence this claim set")
    attempts: int = 0
    created_at: int = Field(alias="createdAt")
    updated_at: int = Field(alias="updatedAt")
    manifest_uri: str | None = Field(default=None, alias="manifestUri")
    reason: str | None = None
    target_run_id: str | None = Field(default=None, alias="targetRunId")
    replay_of: str | None = Field(default=None, alias="replayOf", description="the trigger this one replays")
    start_from: str | None = Field(default=None, alias="startFrom", description="a replay's choice: where it starts")
    variables: dict[str, Any] | None = Field(default=None, description="a replay's choice: the variables it overrides")
    run_status: str | None = Field(
        default=None, alias="runStatus", description="what the run reported: SUCCEEDED or FAILED (first wins)"
    )
    completed_at: int | None = Field(default=None, alias="completedAt", description="when the run reported its end")
    outlets: tuple[dict[str, Any], ...] | None = Field(
        default=None, description="the outlets the run reported (type, asset, version of each)"
    )
    # How a FAILED trigger goes on (set by the dispatcher's ledger; None while it is not FAILED).
    failure: FailureKind | None = None
    failure_code: str | None = Field(default=None, alias="failureCode", description="short and low-cardinality")
    failing_since: int | None = Field(
        default=None, alias="failingSince", description="when the current run of failures with this code began"
    )
    next_attempt_at: int | None = Field(default=None, alias="nextAttemptAt", description="RETRYABLE: when, by itself")
    retries: int = Field(default=0, description="how many times someone asked for a retry by hand")
    run_state: RunState | None = Field(default=None, alias="runState")
    confirm_by: int | None = Field(
        default=None, alias="confirmBy", description="a rule with confirm: by when an outlet commit must confirm it"
    )
    confirmation: Confirmation | None = Field(
        default=None, description="CONFIRMED by an outlet commit carrying the key, or NOT_ADVANCED (docs/rules.md)"
    )
    slot_wait: SlotWait | None = Field(
        default=None, alias="waitingForSlot", description="TRIGGERING and held back by the rule's maxInFlight"
    )

    def accepts_confirmation(self, confirmation: Confirmation, replacing: ConfirmationState | None) -> bool:
        """Whether ``confirmation`` may be kept on this claim now (the ledger's condition, in one place): the claim's
        confirmation is ``replacing``; a SKIPPED claim had no run; NOT_ADVANCED needs a started run that did not
        report FAILED."""
        current = self.confirmation.state if self.confirmation is not None else None
        if current != replacing or self.status is TriggerStatus.SKIPPED:
            return False
        if confirmation.state is ConfirmationState.NOT_ADVANCED:
            return self.status is TriggerStatus.SUCCEEDED and self.run_status != TriggerStatus.FAILED.value
        return True

    def unconfirmed_at(self, now: int) -> bool:
        """Whether the run's confirmation window has passed with no confirmation (it is due to be NOT_ADVANCED)."""
        due = self.confirm_by is not None and self.confirm_by <= now and self.confirmation is None
        return due and self.accepts_confirmation(Confirmation.not_advanced(now), None)


def partition_cursor_id(group_id: str, partition: str) -> str:
    """The cursor id of one partition of a group: ``<groupId>#P<hash>``. A group id never holds ``#``, so it names no
    group, and every store keys it as it keys a group's cursor (one conditional write per claim, as for a group)."""
    return f"{group_id}#P{hashlib.sha256(partition.encode()).hexdigest()[:KEY_HASH_CHARS]}"


# How long one evaluation of a window backlog lasts: the deferral sweep's period. A group behind by many windows
# starts at most policy.maxRunsPerEvaluation of them in it (the wake-ups of its finished runs count in it too).
CATCH_UP_PERIOD_MS = 60_000


class GroupCursor(BaseModel):
    """The versions a group last triggered with ("last triggered versions"). ``seq`` is the CAS token."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    rule_id: str = Field(alias="ruleId")
    group_id: str = Field(alias="groupId", description="the group's id; for one partition of it, partition_cursor_id")
    partition: str | None = Field(default=None, description="the partition key whose runs this cursor follows")
    seq: int = 0
    pins: dict[str, PinnedInput] = Field(default_factory=dict)
    window: Window | None = None
    trigger_key: str | None = Field(default=None, alias="triggerKey")
    claimed_at: int | None = Field(default=None, alias="claimedAt")
    replay_epoch: int = Field(default=0, alias="replayEpoch")
    backfills: dict[str, str] = Field(default_factory=dict, description="asset key -> backfill id seen at the claim")
    baseline: bool = Field(
        default=False,
        description="the pins are the versions present when the rule started (startFrom NEXT_CHANGE), not a run's",
    )
    # Catch-up of a window backlog: when the current evaluation began, and how many windows behind the newest
    # closed one it started (policy.maxRunsPerEvaluation bounds them); zero once a claim is not behind.
    catch_up_since: int | None = Field(default=None, alias="catchUpSince")
    catch_up_runs: int = Field(default=0, alias="catchUpRuns")
    # EACH_VERSION: late snapshots (older than their asset's state) noted on the cursor when they arrived
    # (:mod:`lakehook.domain.late_versions`). ``late_seq`` counts them: a claim is conditional on it as on ``seq``,
    # so one planned before a late snapshot arrived fails. ``late_orders`` are their orders while the group has not
    # triggered yet (its first trigger starts at the oldest); a claim clears them. Kept beside the cursor's body.
    late_seq: int = Field(default=0, alias="lateSeq", exclude=True)
    late_orders: tuple[int, ...] = Field(default=(), alias="lateOrders", exclude=True)
    # EACH_VERSION, before the first trigger: per member asset, the oldest order of a snapshot the resolver saw arrive
    # while the group could not run it yet (a member missing, a quiet period, a run window ...), noted with the late
    # ones (``late_seq`` counts it too), so the first trigger starts at it whenever it comes; a claim clears them.
    first_seen: tuple[tuple[str, int], ...] = Field(default=(), alias="firstSeen", exclude=True)

    def catch_up_spent(self, now: int, cap: int) -> int | None:
        """When the evaluation that already started ``cap`` catch-up windows ends (the next may start then), or
        None while the budget lasts."""
        if self.catch_up_since is None or self.catch_up_runs < cap:
            return None
        ends = self.catch_up_since + CATCH_UP_PERIOD_MS
        return ends if ends > now else None

    def after(
        self, trigger: Trigger, backfills: dict[str, str], baseline: bool = False, catch_up_at: int | None = None
    ) -> GroupCursor:
        """The cursor once ``trigger`` is claimed (``baseline``: a startFrom NEXT_CHANGE starting point;
        ``catch_up_at``: the instant of a claim made behind the newest closed window, counted in the evaluation)."""
        since, runs = None, 0
        if catch_up_at is not None:
            current = self.catch_up_since is not None and catch_up_at < self.catch_up_since + CATCH_UP_PERIOD_MS
            since = self.catch_up_since if current else catch_up_at
            runs = self.catch_up_runs + 1 if current else 1
        return self.model_copy(
            update={
                "seq": self.seq + 1,
                "pins": {p.asset_key: p for p in trigger.inputs},
                "window": trigger.window if trigger.window is not None else self.window,
                "trigger_key": trigger.trigger_key,
                # A skip is not a run: the cooldown keeps counting from the last real trigger.
                "claimed_at": self.claimed_at if trigger.status is TriggerStatus.SKIPPED else trigger.created_at,
                "backfills": backfills,
                "baseline": baseline,
                "catch_up_since": since,
                "catch_up_runs": runs,
                "late_orders": (),  # the claim planned over them: its log holds them from now on
                "first_seen": (),
            }
        )

    def arrived_late(self, order: int, asset_key: str | None = None) -> GroupCursor:
        """The cursor once a late snapshot of order ``order`` (of ``asset_key``) was noted on it (see ``late_seq``)."""
        seen = {*self.first_seen, *([(asset_key, order)] if asset_key is not None else [])}
        return self.model_copy(
            update={
                "late_seq": self.late_seq + 1,
                "late_orders": tuple(sorted({*self.late_orders, order})),
                "first_seen": tuple(sorted(seen)),
            }
        )

    def saw_first(self, orders: Mapping[str, int]) -> GroupCursor:
        """The cursor once the oldest snapshots seen arriving before the first trigger (asset -> order) were noted."""
        seen = {*self.first_seen, *orders.items()}
        return self.model_copy(update={"late_seq": self.late_seq + 1, "first_seen": tuple(sorted(seen))})

    def first_seen_of(self, asset_key: str) -> int | None:
        """Before the first trigger: the oldest order of ``asset_key`` noted as seen arriving (None: none noted)."""
        found = [order for key, order in self.first_seen if key == asset_key]
        return min(found) if self.seq == 0 and found else None

    @property
    def late_floor(self) -> int | None:
        """Before the first trigger: the order below the oldest late snapshot noted (its log is read from there)."""
        return min(self.late_orders) - 1 if self.seq == 0 and self.late_orders else None

    def floor_of(self, asset_key: str) -> int | None:
        """Before the first trigger: the order after which ``asset_key``'s snapshot log is read: below the oldest of
        its snapshots noted (late, or seen arriving while the group waited). Orders are an asset's own (a Paimon id
        and a Hudi instant do not compare), so another member's note sets no floor; only a cursor whose late
        snapshots were noted without their asset (by 0.1.0) falls back to the oldest of them for every member."""
        seen = self.first_seen_of(asset_key)
        if seen is not None:
            return seen - 1
        return None if self.first_seen else self.late_floor

    @classmethod
    def initial(cls, rule_id: str, group_id: str, partition: str | None = None) -> GroupCursor:
        """The cursor of a group (or of one of its partitions) that never triggered (``seq`` 0; stored only once it
        moves)."""
        if partition is None:
            return cls(rule_id=rule_id, group_id=group_id)
        return cls(rule_id=rule_id, group_id=partition_cursor_id(group_id, partition), partition=partition)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)


def next_trigger(
    rule_id: str,
    group_id: str,
    base: GroupCursor,
    pins: tuple[PinnedInput, ...],
    *,
    status: TriggerStatus,
    reason: str | None,
    now: int,
    window: Window | None = None,
    marker: str | None = None,
    partition: str | None = None,
) -> Trigger:
    """The trigger a claim over the cursor ``base`` makes (its next sequence, in its replay epoch), pinning ``pins``.

    Never dated before the group's previous claim (racing resolvers read their clocks at different times), so a
    group's triggers list newest first in claim order."""
    at = max(now, base.claimed_at or 0)
    return Trigger(
        trigger_key=trigger_key(rule_id, group_id, pins, window, base.replay_epoch, marker=marker, partition=partition),
        rule_id=rule_id,
        group_id=group_id,
        status=status,
        inputs=pins,
        window=window,
        partition=partition,
        replay_epoch=base.replay_epoch,
        sequence=base.seq + 1,
        created_at=at,
        updated_at=at,
        reason=reason,
    )
