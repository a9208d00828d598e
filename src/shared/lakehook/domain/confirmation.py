"""Runs confirmed by the data they wrote: the trigger key in an outlet table's own commit metadata.

A run that writes an outlet table of its rule puts its trigger key into that commit's metadata under one
property, ``lakehook.trigger-key`` (:mod:`lakehook.wire.commit_properties`): an Iceberg snapshot summary property,
a Delta ``commitInfo`` field (or Spark's ``userMetadata``), a Paimon snapshot property, a Hudi ``extraMetadata``
entry (docs/targets.md#confirmed-by-the-data). The poller reads it with the commit; the commit confirms the trigger
it names when it changed data (a compaction never confirms) and its table is one of the rule's ``outlets``
(a commit to another table, or one naming another trigger's key, confirms nothing else).

``confirm.withinSeconds`` (per rule): a run that started and was not confirmed within that time is
NOT_ADVANCED, unless it reported that it FAILED (its failure says more). A confirmation that arrives after
NOT_ADVANCED still turns the trigger CONFIRMED (the data came late; ``late`` says so).

A commit that confirms its run is also kept on the outlet's asset state (:func:`confirmed_output`: the newest such
commit, by its order in the table's history), so a downstream member with ``confirmationStatus: CONFIRMED``
(:class:`lakehook.domain.conditions.ConfirmedInput`) holds only while the version it pins is that commit, and the
state's write wakes the rules reading the table (a confirmation recorded after the commit's own ingest).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.state_changes import Advance, Below, StateField
from lakehook.wire.commit_properties import TRIGGER_KEY_PROPERTY, commit_properties, trigger_key_in, trigger_key_in_text

__all__ = [
    "TRIGGER_KEY_PROPERTY",
    "ConfirmSpec",
    "Confirmation",
    "ConfirmationState",
    "commit_properties",
    "confirmed_output",
    "trigger_key_in",
    "trigger_key_in_text",
    "unconfirmed_output",
]

# at most 6 days: the sweep finds the runs to mark among the claims of the last 7 days (the ledger's lookback)
MAX_CONFIRM_SECONDS = 6 * 86_400


class ConfirmationState(StrEnum):
    CONFIRMED = "CONFIRMED"  # an outlet table holds a data commit carrying the trigger's key
    NOT_ADVANCED = "NOT_ADVANCED"  # the run's confirmation window passed without such a commit


class ConfirmSpec(BaseModel):
    """A rule's ``confirm``: how long after its run started an outlet commit carrying the trigger key must appear."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    within_seconds: int = Field(
        alias="withinSeconds",
        ge=1,
        le=MAX_CONFIRM_SECONDS,
        description="a run not confirmed by an outlet commit this long after it started is NOT_ADVANCED",
    )

    @property
    def within_ms(self) -> int:
        return self.within_seconds * 1000


class Confirmation(BaseModel):
    """What is known about a trigger's output: CONFIRMED by which commit, or NOT_ADVANCED, and when decided."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    state: ConfirmationState
    decided_at: int = Field(alias="decidedAt", description="when lakehook decided it (epoch ms)")
    asset_key: str | None = Field(default=None, alias="assetKey", description="CONFIRMED: the outlet table")
    snapshot_id: int | None = Field(default=None, alias="snapshotId", description="CONFIRMED: the commit it wrote")
    commit_time: int | None = Field(default=None, alias="commitTime", description="CONFIRMED: when it committed")
    late: bool = Field(default=False, description="CONFIRMED after the trigger had been NOT_ADVANCED")

    @classmethod
    def confirmed(cls, asset_key: str, snapshot_id: int, commit_time: int | None, now: int) -> Confirmation:
        return cls(
            state=ConfirmationState.CONFIRMED,
            decided_at=now,
            asset_key=asset_key,
            snapshot_id=snapshot_id,
            commit_time=commit_time,
        )

    @classmethod
    def not_advanced(cls, now: int) -> Confirmation:
        return cls(state=ConfirmationState.NOT_ADVANCED, decided_at=now)


def confirmed_output(snapshot_id: int, order: int, trigger_key: str) -> Advance:
    """The outlet state's change when its commit ``snapshot_id`` (at ``order`` in the table's history) confirmed the
    run of ``trigger_key``: advance-only by the order, so an older commit's confirmation arriving late changes nothing
    and a redelivery is ALREADY."""
    return Advance(
        Below(StateField.CONFIRMED_ORDER, order),
        sets={
            StateField.CONFIRMED_SNAPSHOT_ID: snapshot_id,
            StateField.CONFIRMED_ORDER: order,
            StateField.CONFIRMED_TRIGGER_KEY: trigger_key,
        },
    )


def unconfirmed_output(snapshot_id: int, order: int, trigger_key: str, why: str) -> Advance:
    """The outlet state's change when its data commit ``snapshot_id`` carried ``trigger_key`` and confirmed no run
    (``why``: no such trigger, or the table is not among its rule's outlets), so explain can name the key and the
    reason; advance-only by the commit's order, as :func:`confirmed_output`."""
    return Advance(
        Below(StateField.UNCONFIRMED_ORDER, order),
        sets={
            StateField.UNCONFIRMED_SNAPSHOT_ID: snapshot_id,
            StateField.UNCONFIRMED_ORDER: order,
            StateField.UNCONFIRMED_TRIGGER_KEY: trigger_key,
            StateField.UNCONFIRMED_REASON: why,
        },
    )
