"""Ports of the resolver: rules and their reverse index, trigger claims, batched state reads,
the state history EACH_VERSION needs, and deferred re-evaluations."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from lakehook.domain.deferrals import AssetRecheck as AssetRecheck  # re-exported: the port speaks of them
from lakehook.domain.deferrals import Deferral as Deferral
from lakehook.domain.errors import ConflictError
from lakehook.domain.events import AssetEvent
from lakehook.domain.input_details import EventRef
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.requests import RecordedRequest
from lakehook.domain.rules import Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus
from lakehook.domain.versions import LoggedSnapshot, SnapshotRecord, Verdict
from lakehook.ports.store import Page

GroupRef = tuple[str, str]
"""(ruleId, groupId)"""


@dataclass(frozen=True)
class RuleError:
    """Why a rule's evaluation last failed (a bug in the rule or in lakehook, never the infrastructure), and when."""

    message: str
    at: int
    group_id: str | None = None


@dataclass(frozen=True)
class StoredRule:
    """A rule as stored: the rule, a revision that moves on every write, and when; its last evaluation error."""

    rule: Rule
    revision: int
    created_at: int
    updated_at: int
    last_error: RuleError | None = None


class UnreadableRuleError(ConflictError):
    """A stored rule does not load (corrupted, or written by an incompatible version): write it again."""

    def __init__(self, rule_id: str, reason: str) -> None:
        super().__init__(f"rule {rule_id!r} is stored in a form that does not load ({reason}); PUT it again")
        self.rule_id = rule_id
        self.reason = reason


class RuleStore(ABC):
    """Rules, and the reverse index asset -> rules that lets one query find every rule of an asset."""

    @abstractmethod
    def put_rule(self, rule: Rule, now_ms: int) -> StoredRule:
        """Create or replace the rule and its reverse index together. Raises ConflictError if raced too often."""

    @abstractmethod
    def get_rule(self, rule_id: str) -> StoredRule | None:
        """The rule, or None. Raises UnreadableRuleError for a stored rule that does not load."""

    @abstractmethod
    def get_rules(self, rule_ids: Collection[str]) -> dict[str, Rule]:
        """The rules that exist among ``rule_ids`` (one batched read)."""

    @abstractmethod
    def list_rules(self, limit: int, next_token: str | None = None) -> Page[StoredRule]:
        """Rules in id order; a stored rule that does not load is in the page's ``unreadable``, not its items."""

    @abstractmethod
    def delete_rule(self, rule_id: str) -> bool:
        """Delete the rule and its index entries; True if it existed. Its cursors and triggers stay."""

    @abstractmethod
    def rules_for_asset(self, asset_key: str) -> list[Rule]:
        """Every rule naming the asset as a member: one query of the reverse index."""

    @abstractmethod
    def record_error(self, rule_id: str, error: RuleError) -> None:
        """Keep ``error`` as the rule's ``lastError`` (nothing if the rule no longer exists)."""

    @abstractmethod
    def clear_error(self, rule_id: str, group_id: str) -> None:
        """Drop the rule's ``lastError`` if it was recorded for ``group_id`` (that group evaluated fine since).
        A put of the rule drops it too."""


class ClaimOutcome(StrEnum):
    CLAIMED = "CLAIMED"  # this call created the claim and moved the cursor
    DUPLICATE = "DUPLICATE"  # the trigger key was claimed before
    CURSOR_MOVED = "CURSOR_MOVED"  # another claim moved the group's cursor first


@dataclass(frozen=True)
class ClaimResult:
    """What a claim did; on CURSOR_MOVED (or DUPLICATE) the cursor as it now is, when known."""

    outcome: ClaimOutcome
    cursor: GroupCursor | None = None


@dataclass(frozen=True)
class Claim:
    """One claim to make (:meth:`TriggerStore.claim`'s arguments): the trigger, the group cursor once it is made,
    and the cursor it requires (None: no claim moved the group yet)."""

    trigger: Trigger
    cursor: GroupCursor
    expected: GroupCursor | None

    @property
    def ref(self) -> GroupRef:
        return (self.cursor.rule_id, self.cursor.group_id)


MAX_CLAIMS_PER_TRANSACTION = 50
"""Claims :meth:`TriggerStore.claim_many` makes in one transaction: two items each, and DynamoDB's
TransactWriteItems takes 100 actions at most."""


@dataclass(frozen=True)
class RequestClaim:
    """What a claim under a request key did: ``claimed`` both, or nothing (``answered``: the key was taken, this
    is its first answer; None: the trigger key was taken)."""

    claimed: bool
    answered: RecordedRequest | None = None


class TriggerStore(ABC):
    """Trigger claims and the group cursors they move."""

    @abstractmethod
    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        """One transaction: create the claim (the key must be absent) and store ``cursor`` (the group's
        cursor must still be ``expected``: its ``seq`` and its ``late_seq``; None or ``seq`` 0 means no claim moved
        it yet, and with ``late_seq`` 0 that it must not exist at all)."""

    @abstractmethod
    def claim_many(self, claims: Sequence[Claim]) -> list[ClaimResult]:
        """Each claim as :meth:`claim` makes it, answered in order, in as few transactions as the store allows (a
        claim whose condition fails writes nothing and leaves the others to be made; a claim on a cursor an earlier
        one of ``claims`` moves is made after it, so it may require the cursor that one leaves). Raises where
        :meth:`claim` would (a conflict with a concurrent write on the claim's own items, a throttle): some of the
        claims may have been made then (one made again answers DUPLICATE)."""

    @abstractmethod
    def admit_late(
        self, refs: Collection[GroupRef], order: int, asset_key: str | None = None
    ) -> dict[GroupRef, GroupCursor]:
        """Note on each group's cursor that a late snapshot of order ``order`` (of ``asset_key``) arrived (one atomic
        write per group: ``late_seq`` moves on, ``order`` joins ``late_orders`` and, with its asset, ``first_seen``;
        the cursor is created if the group never triggered), so any claim planned before it fails; each cursor as
        that write left it."""

    @abstractmethod
    def forget_unstarted(self, refs: Collection[GroupRef]) -> None:
        """Drop the cursors of groups that never triggered (only notes on them: late or first-seen snapshots), as
        their rule is deleted: a rule created again under the same id starts from what arrives then, not from what
        an earlier rule of that id saw. A cursor a claim moved stays (re-creating a rule never re-fires old runs)."""

    @abstractmethod
    def note_first_seen(self, ref: GroupRef, orders: Mapping[str, int]) -> GroupCursor:
        """Note on a group's cursor, before its first trigger, the oldest snapshot of each asset the resolver saw
        arrive (asset key -> order) while the group could not run it yet, in one atomic write: ``late_seq`` moves
        on (a claim planned before it fails), the orders join ``first_seen``, the cursor is created if the group
        never triggered. The cursor as that write left it."""

    @abstractmethod
    def put_replay(self, trigger: Trigger) -> bool:
        """Record a replay's claim (no cursor moves: the group's history is unchanged); False if the key exists."""

    @abstractmethod
    def put_replay_once(self, trigger: Trigger, request: RecordedRequest) -> RequestClaim:
        """One transaction: a replay's (or manual run's) claim, as :meth:`put_replay`, and the request's answer under
        its key (``REQUEST#<key>``, which must be absent or expired). Both are written, or neither."""

    def put_replay_answered(self, trigger: Trigger, recorded: RecordedRequest | None) -> bool | RecordedRequest:
        """A replay's (or manual run's) claim, with its request's answer when there is a request key
        (:meth:`put_replay_once`, else :meth:`put_replay`): whether this call claimed it, or the answer a racing
        twin of the request recorded first."""
        if recorded is None:
            return self.put_replay(trigger)
        outcome = self.put_replay_once(trigger, recorded)
        return outcome.answered if outcome.answered is not None else outcome.claimed

    @abstractmethod
    def get_request(self, key: str, now_ms: int) -> RecordedRequest | None:
        """The answer recorded under a request key, unless it has expired by ``now_ms``."""

    @abstractmethod
    def get(self, trigger_key: str) -> Trigger | None:
        """The trigger, or None."""

    @abstractmethod
    def get_many(self, trigger_keys: Collection[str]) -> dict[str, Trigger]:
        """The triggers among ``trigger_keys`` that exist, by key (batched reads)."""

    @abstractmethod
    def list_for_rule(
        self, rule_id: str, status: TriggerStatus | None = None, limit: int = 50, next_token: str | None = None
    ) -> Page[Trigger]:
        """The rule's triggers, newest first, optionally of one status."""

    @abstractmethod
    def get_cursors(self, refs: Collection[GroupRef]) -> dict[GroupRef, GroupCursor]:
        """The cursors that exist among ``refs``."""


@dataclass(frozen=True)
class ResolutionInputs:
    """What one resolver invocation reads: member states and group cursors, and what of them did not parse
    (a corrupted or foreign item: what is wrong with it, by asset key or group), so only the groups that
    need such an item fail."""

    states: dict[str, AssetState]
    cursors: dict[GroupRef, GroupCursor]
    unreadable_states: dict[str, str] = field(default_factory=dict)
    unreadable_cursors: dict[GroupRef, str] = field(default_factory=dict)

    def unreadable(self, rule_id: str, group_id: str, asset_keys: Collection[str]) -> str | None:
        """Why the group cannot be evaluated from what was read, or None."""
        if (rule_id, group_id) in self.unreadable_cursors:
            return (
                f"the stored cursor of group {group_id!r} does not parse: {self.unreadable_cursors[rule_id, group_id]}"
            )
        for key in sorted(asset_keys):
            if key in self.unreadable_states:
                return f"the stored state of {key} does not parse: {self.unreadable_states[key]}"
        return None


class StateReader(ABC):
    """Batched, strongly consistent reads of asset states (and group cursors) for the resolver."""

    @abstractmethod
    def get_states(self, asset_keys: Collection[str]) -> dict[str, AssetState]:
        """The states that exist among ``asset_keys``."""

    @abstractmethod
    def read(self, asset_keys: Collection[str], cursors: Collection[GroupRef]) -> ResolutionInputs:
        """States and cursors in one batched read (BatchGetItem pages of 100 keys on DynamoDB)."""

    def snapshots(self, wanted: Collection[tuple[str, int]]) -> dict[tuple[str, int], SnapshotRecord]:
        """What was recorded of these (asset key, snapshot id) pairs, from their SNAPSHOT_COMMITTED events
        (kept for the event retention); pairs never recorded are absent. A reader without events knows none."""
        return {}

    def quality_verdicts(self, wanted: Collection[tuple[str, int]]) -> dict[tuple[str, int], Verdict]:
        """The verdict of the quality checks recorded on these (asset key, snapshot id) pairs, from their
        QUALITY_CHECK_PASSED / _FAILED events (one identity per snapshot and verdict, kept for the event
        retention); pairs no check reported on are absent (UNKNOWN). A reader without events knows none."""
        return {}

    def recorded_events(self, wanted: Collection[EventRef]) -> dict[EventRef, AssetEvent]:
        """The events recorded under these identities (asset key, type, version), as first recorded (kept for the
        event retention); identities never recorded, or expired, are absent. A reader without events knows none."""
        return {}


class StateHistory(ABC):
    """What EACH_VERSION needs to trigger every version in order: past states of an asset by state version, and
    the snapshot log (every accepted snapshot by its order, a late older one too)."""

    @abstractmethod
    def record(self, states: Mapping[str, Sequence[AssetState]], now_ms: int) -> None:
        """Keep these states (per asset key); idempotent."""

    @abstractmethod
    def between(self, asset_key: str, first_version: int, last_version: int) -> list[AssetState]:
        """The kept states with ``first_version <= version <= last_version``, oldest first."""

    @abstractmethod
    def record_snapshots(self, snapshots: Mapping[str, Sequence[SnapshotRecord]], now_ms: int) -> None:
        """Log these snapshots (per asset key) by order; a snapshot logged before keeps when it was first logged."""

    @abstractmethod
    def log_snapshot(self, asset_key: str, record: SnapshotRecord, now_ms: int, *, late: bool = False) -> bool:
        """Log one snapshot as :meth:`record_snapshots` does (``late``: by its push, older than the state, kept as
        :attr:`lakehook.domain.versions.LoggedSnapshot.late`); whether this call logged it (False: it was before)."""

    @abstractmethod
    def snapshots_after(self, asset_key: str, order: int, limit: int) -> list[LoggedSnapshot]:
        """The logged snapshots with an order above ``order``, oldest first, at most ``limit``."""


@dataclass(frozen=True)
class StateChange:
    """An asset whose state changed (``state``: the new image when the stream record carries one), or an asset
    with a newly recorded snapshot (``snapshot``: from the event item, whether or not it advanced the state)."""

    asset_key: str
    state: AssetState | None = None
    snapshot: SnapshotRecord | None = None  # a SNAPSHOT_COMMITTED event recorded (even one older than the state)
    partitions: TouchedPartitions | None = None  # the partitions that snapshot's event names
    # a slice of a commit's partitions, carried over from an invocation that had more than it could write
    # (resolve_continue.py): it wakes only the partitioned groups mapping the asset, and only for these partitions
    partitions_only: bool = False
    # where ``partitions``' keys start among the commit's sorted keys (the event's at 0), and how many keys the commit
    # touched, when known: a commit is known whole once its pieces cover them all (domain/commit_pieces.py)
    offset: int | None = None
    total: int | None = None


@dataclass(frozen=True)
class PartitionWork:
    """Partitions of a partitioned group to evaluate now, carried over from an invocation that reached its bound
    (resolve_continue.py): ``partitions`` (ready ones past its claims), or the pending partitions below ``after``
    (the next page of a scan of the group's pending partitions)."""

    rule_id: str
    group_id: str
    partitions: tuple[str, ...] = ()
    after: str | None = None


class DeferralStore(ABC):
    """Deferred re-evaluations. A sweep marks due ones, and that write wakes the resolver."""

    @abstractmethod
    def defer(self, deferral: Deferral) -> None:
        """Ask for a re-evaluation at ``due_at``; the group keeps one pending deferral, the latest asked for."""

    @abstractmethod
    def recheck(self, asset_keys: Collection[str], due_at: int) -> None:
        """Ask for a re-evaluation of every rule of these assets at ``due_at`` (one pending recheck per asset)."""

    @abstractmethod
    def due(self, now_ms: int, limit: int) -> list[Deferral | AssetRecheck]:
        """Pending deferrals and rechecks due at ``now_ms``, oldest first."""

    @abstractmethod
    def mark_due(self, deferral: Deferral | AssetRecheck, now_ms: int) -> bool:
        """Mark it due (the stream then wakes the resolver); False if it changed meanwhile."""
