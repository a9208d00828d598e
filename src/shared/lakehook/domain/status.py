"""What a member or a group is waiting for: the explain status, also the ``blocked_by`` metric dimension."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    READY = "READY"
    BLOCKED_BY_SNAPSHOT = "BLOCKED_BY_SNAPSHOT"
    BLOCKED_BY_WATERMARK = "BLOCKED_BY_WATERMARK"
    BLOCKED_BY_QUALITY = "BLOCKED_BY_QUALITY"
    BLOCKED_BY_SCHEMA = "BLOCKED_BY_SCHEMA"
    BLOCKED_BY_TAG = "BLOCKED_BY_TAG"
    BLOCKED_BY_UNKNOWN_ASSET = "BLOCKED_BY_UNKNOWN_ASSET"
    BLOCKED_BY_BACKFILL = "BLOCKED_BY_BACKFILL"
    BLOCKED_BY_COVERAGE = "BLOCKED_BY_COVERAGE"
    BLOCKED_BY_MANIFEST = "BLOCKED_BY_MANIFEST"
    BLOCKED_BY_CDC_LAG = "BLOCKED_BY_CDC_LAG"  # cdcRecoveredTo: the CDC source has not caught up to the instant needed
    BLOCKED_BY_CONFIRMATION = "BLOCKED_BY_CONFIRMATION"  # confirmationStatus: the version was not a confirmed run's
    WAITING_FOR_UPDATE = "WAITING_FOR_UPDATE"
    WAITING_FOR_PARTITION = "WAITING_FOR_PARTITION"  # a partitioned group: no data commit of a member touched it yet
    WAITING_FOR_VERSION = "WAITING_FOR_VERSION"  # EACH_VERSION: the lineage says a snapshot is missing; polled for
    WAITING_FOR_RUN = "WAITING_FOR_RUN"  # EACH_VERSION: the previous version's trigger has not SUCCEEDED yet
    WAITING_FOR_SCHEDULE = "WAITING_FOR_SCHEDULE"  # a scheduled group ran for the latest tick: until the next
    WAITING_FOR_RUN_WINDOW = "WAITING_FOR_RUN_WINDOW"  # ready outside its runWindow's hours: until the window opens
    BLOCKED_BY_FAILED_TRIGGER = "BLOCKED_BY_FAILED_TRIGGER"  # EACH_VERSION: the previous version's trigger FAILED
    CATCHING_UP = "CATCHING_UP"  # a window backlog: this evaluation started maxRunsPerEvaluation; the rest later
    COOLDOWN = "COOLDOWN"
    QUIET_PERIOD = "QUIET_PERIOD"
    DISABLED = "DISABLED"
    ERROR = "ERROR"  # evaluating the group raised (explain shows the rule's error; the resolver retries it)

    @property
    def blocked_by(self) -> str:
        """The metric dimension: ``quality`` for BLOCKED_BY_QUALITY, ``cooldown`` for COOLDOWN …"""
        return self.value.removeprefix("BLOCKED_BY_").lower()
