"""Dependency rules: groups (OR) of members (AND), each member an asset plus a condition, and a policy.

A rule is what a downstream run waits for. The resolver evaluates it against asset state
(:mod:`lakehook.domain.evaluation`) and claims one trigger per combination of pinned versions
(:mod:`lakehook.domain.triggers`). The JSON shape is the contract of ``PUT /rules/{ruleId}``.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from lakehook.domain.assets import validate_asset_key
from lakehook.domain.completion import MAX_RULE_OUTLETS, validate_outlet_entry
from lakehook.domain.confirmation import ConfirmSpec
from lakehook.domain.freshness import Freshness
from lakehook.domain.ids import ALIAS_NAME_PATTERN, RULE_ID_PATTERN
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_rules import (
    MAX_PARTITION_FIELDS,
    MemberPartition,
    fan_out_clash,
    validate_partition_by,
)
from lakehook.domain.partition_time import validate_partition_timezone
from lakehook.domain.require_rules import check_require
from lakehook.domain.requirements import MAX_REQUIRE_DEPTH, Require
from lakehook.domain.run_slots import DEFAULT_MAX_RUN_SECONDS, MAX_IN_FLIGHT, SlotLimit
from lakehook.domain.run_windows import RunWindow
from lakehook.domain.schedules import GroupSchedule
from lakehook.domain.targets import STORED_CONTEXT, RuleTarget
from lakehook.domain.time import parse_instant_ms

ID_PATTERN = RULE_ID_PATTERN
_ID = re.compile(ID_PATTERN)
MAX_GROUPS = 20
MAX_MEMBERS_PER_GROUP = 48
# Every distinct member asset gets a reverse-index item, written in one transaction with the rule
# (at most 100 items, old and new index items together): 1 + 48 + 48 stays inside that limit.
MAX_ASSETS_PER_RULE = 48
# The rule's JSON is copied into each reverse-index item; this keeps 48 copies well inside
# DynamoDB's 4 MB transaction and 400 KB item limits.
MAX_RULE_BYTES = 32 * 1024
MAX_WINDOW_MS = 31 * 86_400_000
MAX_LATENESS_SECONDS = 7 * 86_400
MAX_POLICY_SECONDS = 31 * 86_400

# ASCII digits only ([0-9]: ``\d`` takes every script's digits) and the whole text (fullmatch: ``$`` lets "\n" through)
_DURATION = re.compile(
    r"P(?:(?P<w>[0-9]+)W)?(?:(?P<d>[0-9]+)D)?(?:T(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9]+)S)?)?", re.ASCII
)


def validate_id(value: str, what: str) -> str:
    """Answer the id if it is 1..64 letters, digits, ``_``, ``-`` or ``.``; else raise ValueError."""
    if not isinstance(value, str) or not _ID.match(value):
        raise ValueError(f"{what} must be 1 to 64 letters, digits, '_', '-' or '.'")
    return value


def parse_duration_ms(text: str) -> int:
    """An ISO 8601 duration of weeks, days, hours, minutes and seconds (``PT1H``, ``P1D``) in milliseconds."""
    found = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if not found or text in ("P", "PT") or text.endswith("T"):
        raise ValueError(f"window must be an ISO 8601 duration such as PT15M, PT1H or P1D, got {text!r}")
    parts = {k: int(v) for k, v in found.groupdict().items() if v is not None}
    seconds = (
        parts.get("w", 0) * 604_800
        + parts.get("d", 0) * 86_400
        + parts.get("h", 0) * 3_600
        + parts.get("m", 0) * 60
        + parts.get("s", 0)
    )
    if seconds <= 0:
        raise ValueError("window must be longer than zero")
    return seconds * 1000


class Mode(StrEnum):
    ALL_UPDATED = "ALL_UPDATED"  # every member advanced since the group last triggered
    ANY_UPDATED = "ANY_UPDATED"  # at least one member advanced; intermediate versions coalesce
    EACH_VERSION = "EACH_VERSION"  # every new version gets its own trigger, in order


class BackfillPolicy(StrEnum):
    TRIGGER = "TRIGGER"  # snapshots committed during a backfill count like any other
    SKIP = "SKIP"  # hold the group while a member's backfill runs; its snapshots never trigger


class StartFrom(StrEnum):
    LATEST = "LATEST"  # a new (or re-enabled) rule fires on the versions already there, if they satisfy it
    NEXT_CHANGE = "NEXT_CHANGE"  # it fires only once a member has a version newer than those it started with


class WindowSpec(BaseModel):
    """Aligned windows: ``watermarkAtLeast`` fires once per window the watermark passed; ``coverage`` once per
    window its intervals cover fully (each closes ``allowedLatenessSeconds`` after its end)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    window: str = Field(
        description="ISO 8601 duration in ASCII digits: PT15M, PT1H, P1D; windows are aligned to the epoch (UTC)"
    )
    allowed_lateness_seconds: int = Field(
        default=0,
        alias="allowedLatenessSeconds",
        ge=0,
        le=MAX_LATENESS_SECONDS,
        description="the window closes once the watermark is this far past its end",
    )

    @field_validator("window")
    @classmethod
    def _duration(cls, value: str) -> str:
        size = parse_duration_ms(value)
        if size > MAX_WINDOW_MS:
            raise ValueError("window must be at most 31 days")
        return value

    @property
    def size_ms(self) -> int:
        return parse_duration_ms(self.window)

    @property
    def lateness_ms(self) -> int:
        return self.allowed_lateness_seconds * 1000

    def newest_complete_end(self, watermark: int) -> int:
        """The end of the newest window the watermark has closed (may be 0)."""
        return ((watermark - self.lateness_ms) // self.size_ms) * self.size_ms


CDC_WINDOW = "window"  # cdcRecoveredTo's spelling for "the end of the window the group runs for"


def _watermark_kind(value: Any) -> str:
    return "window" if isinstance(value, dict | WindowSpec) else "instant"


WatermarkRequirement = Annotated[
    Annotated[int, Tag("instant")] | Annotated[WindowSpec, Tag("window")], Discriminator(_watermark_kind)
]


class Condition(BaseModel):
    """What a member's asset must satisfy. The newest version that satisfies all of it is pinned."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    snapshot_required: bool = Field(default=True, alias="snapshotRequired")
    min_snapshot_id: int | None = Field(default=None, alias="minSnapshotId", ge=0)
    watermark_at_least: WatermarkRequirement | None = Field(
        default=None,
        alias="watermarkAtLeast",
        description="epoch milliseconds (or ISO 8601), or a window spec {window, allowedLatenessSeconds}",
    )
    quality_status: Literal["PASSED"] | None = Field(default=None, alias="qualityStatus")
    schema_status: Literal["COMPATIBLE"] | None = Field(default=None, alias="schemaStatus")
    tag: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="pin the snapshot this tag names; the group fires once per tag, not on later snapshots",
    )
    include_compaction: bool | None = Field(
        default=None,
        alias="includeCompaction",
        description="count snapshots that change no data (Paimon COMPACT or ANALYZE, Iceberg replace, "
        "Delta OPTIMIZE, VACUUM or a property change, Hudi compaction or clustering, any snapshot with "
        "dataChanged false) as updates",
    )
    coverage: WindowSpec | None = Field(
        default=None,
        description="aligned windows {window, allowedLatenessSeconds} of [start, end) the asset's intervals "
        "must cover fully: one trigger per covered window, in order",
    )
    manifest: Literal["SEALED"] | None = Field(default=None, description="a verified, sealed spool manifest")
    backfill_status: Literal["COMPLETED"] | None = Field(
        default=None, alias="backfillStatus", description="wait until the asset's backfill has completed"
    )
    confirmation_status: Literal["CONFIRMED"] | None = Field(
        default=None,
        alias="confirmationStatus",
        description="the version pinned was written by a run that was CONFIRMED: its commit to this table carried "
        "the trigger key of a rule that lists the table among its outlets (docs/rules.md#confirmationstatus-confirmed)",
    )
    cdc_recovered_to: Literal["window"] | int | None = Field(
        default=None,
        alias="cdcRecoveredTo",
        description="wait until the asset's CDC source has caught up (a CDC_LAG_RECOVERED watermark) to an instant "
        '(epoch milliseconds or ISO 8601), or with "window" to the end of the window the group runs for (a group '
        "with a watermark or coverage window)",
    )

    @model_validator(mode="before")
    @classmethod
    def _spool_needs_no_snapshot(cls, data: Any) -> Any:
        # A spooled asset (coverage or a manifest) usually never commits a snapshot: unless the rule
        # says otherwise, those conditions do not also wait for one.
        spooled = isinstance(data, dict) and (data.get("coverage") is not None or data.get("manifest") is not None)
        if spooled and "snapshotRequired" not in data and "snapshot_required" not in data:
            return {**data, "snapshotRequired": False}
        return data

    @model_validator(mode="after")
    def _confirmed_version(self) -> Condition:
        if self.confirmation_status is None:
            return self
        if self.manifest is not None or self.coverage is not None:
            raise ValueError(
                "confirmationStatus: a run is confirmed by a table commit carrying its trigger key; a spooled asset "
                "(manifest or coverage) commits none"
            )
        if self.include_compaction:
            raise ValueError(
                "confirmationStatus: a compaction never confirms a run, so with includeCompaction the member would "
                "wait at every compaction; leave includeCompaction unset"
            )
        return self

    @field_validator("watermark_at_least", mode="before")
    @classmethod
    def _instant(cls, value: object) -> object:
        if value is None or isinstance(value, dict | WindowSpec):
            return value
        return parse_instant_ms(value)

    @field_validator("cdc_recovered_to", mode="before")
    @classmethod
    def _cdc_target(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and value == CDC_WINDOW):
            return value
        try:
            return parse_instant_ms(value)
        except ValueError as exc:
            raise ValueError(
                f'must be "{CDC_WINDOW}" (the end of the window the group runs for) or an instant (epoch '
                f"milliseconds or ISO 8601 with a zone): {exc}"
            ) from exc

    @property
    def window(self) -> WindowSpec | None:
        return self.watermark_at_least if isinstance(self.watermark_at_least, WindowSpec) else None

    @property
    def cdc_window(self) -> bool:
        """``cdcRecoveredTo: window``: the CDC source must have caught up to the end of the group's window."""
        return self.cdc_recovered_to == CDC_WINDOW

    @property
    def cdc_floor(self) -> int | None:
        """The instant the CDC source must have caught up to, when it is not the window's end."""
        value = self.cdc_recovered_to
        return value if isinstance(value, int) else None

    @property
    def watermark_floor(self) -> int | None:
        """The absolute watermark the member needs, when it is not a window."""
        value = self.watermark_at_least
        return value if isinstance(value, int) else None


class Member(BaseModel):
    """One asset of a group and its condition."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    asset_key: str = Field(alias="assetKey")
    condition: Condition = Field(default_factory=Condition)
    alias: str | None = Field(
        default=None,
        pattern=ALIAS_NAME_PATTERN,
        description='the alias the member was named by: written as {"alias": name} without assetKey, the '
        "member becomes one member per asset of the alias (resolved when the rule is written, each with this "
        "condition); assetKey is then one of the alias's assets",
    )
    name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.\-]{1,64}$",
        description="the name the group's require tree refers to the member by (its alias or assetKey work too)",
    )
    partition: MemberPartition | None = Field(
        default=None,
        description="in a group with partitionBy: the member is partitioned, and this maps its partition keys onto "
        "the group's ({} when its fields have the group's names); absent: the member gates every partition's run",
    )

    @field_validator("asset_key")
    @classmethod
    def _key(cls, value: str) -> str:
        return validate_asset_key(value)


def _check_partitioned_member(i: int, member: Member, partition_by: tuple[str, ...]) -> None:
    """Member ``i`` of a group with partitionBy: its partition maps onto the group's fields, and its condition sets
    nothing but minSnapshotId (its version is the newest data commit touching the partition)."""
    partition = member.partition
    assert partition is not None
    misplaced = partition.misplaced(partition_by)
    if misplaced is not None:
        raise ValueError(f"members.{i}.partition.fields.{misplaced[0]}: {misplaced[1]}")
    c = member.condition
    kept = {k for k, v in c.model_dump(exclude_defaults=True).items() if v is not None}
    if kept - {"min_snapshot_id"} or not c.snapshot_required:
        raise ValueError(
            f"members.{i}.condition: a partitioned member's version is the newest data commit touching the "
            "partition; its condition may only set minSnapshotId"
        )


class Group(BaseModel):
    """Members that must all hold at once (AND), or as its ``require`` tree says. A rule's groups are alternatives
    (OR)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    group_id: str = Field(alias="groupId")
    partition_by: tuple[str, ...] | None = Field(
        default=None,
        alias="partitionBy",
        min_length=1,
        max_length=MAX_PARTITION_FIELDS,
        description="run once per partition key of these fields (dt=2026-12-01) whose partitioned members all have a "
        "data commit touching it since that partition's last run (docs/partitions.md)",
    )
    partition_timezone: str | None = Field(
        default=None,
        alias="partitionTimezone",
        max_length=64,
        description="with partitionBy: the IANA time zone the partitions' time values are in (default UTC): "
        "dt=2026-12-06 is that day there, the window a coverage member must cover and the period a freshness "
        "expectedBy counts from (docs/partitions.md)",
    )
    members: list[Member] = Field(default_factory=list, max_length=MAX_MEMBERS_PER_GROUP)
    schedule: GroupSchedule | None = Field(
        default=None,
        description="fire once per cron tick, after the tick and once the members are satisfied (with ALL_UPDATED "
        "or ANY_UPDATED, updated since the last tick's trigger); a group of a schedule alone fires on every tick",
    )
    run_window: RunWindow | None = Field(
        default=None,
        alias="runWindow",
        description="the hours of the day the group's runs may start in; outside them a ready group waits "
        "(WAITING_FOR_RUN_WINDOW) until the window opens, and then runs for what it finds",
    )
    require: Require | None = Field(
        default=None,
        description="a tree over the members instead of all of them: allOf, anyOf, or atLeast n of, nested up to "
        f"{MAX_REQUIRE_DEPTH} deep, naming members by name, alias or assetKey (every member named); the claim pins "
        "the members that hold (docs/rules.md#nested-conditions-require)",
    )

    @field_validator("group_id")
    @classmethod
    def _id(cls, value: str) -> str:
        return validate_id(value, "groupId")

    @field_validator("partition_by")
    @classmethod
    def _partition_fields(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else validate_partition_by(value)

    @field_validator("partition_timezone")
    @classmethod
    def _partition_zone(cls, value: str | None) -> str | None:
        return None if value is None else validate_partition_timezone(value)

    @field_validator("members")
    @classmethod
    def _partitioned(cls, members: list[Member], info: ValidationInfo) -> list[Member]:
        if "partition_by" not in info.data:
            return members  # partitionBy itself is wrong, and named so
        partition_by = info.data["partition_by"]
        named = [i for i, m in enumerate(members) if m.partition is not None]
        if partition_by is None:
            if named:
                raise ValueError(f"members.{named[0]}.partition: the group has no partitionBy to map onto")
            return members
        if not named:
            raise ValueError("a group with partitionBy has a partitioned member (one with partition, {} at least)")
        for i in named:
            _check_partitioned_member(i, members[i], partition_by)
        clash = fan_out_clash({i: m.partition for i, m in enumerate(members) if m.partition is not None}, partition_by)
        if clash is not None:
            i, field, why = clash
            raise ValueError(f"members.{i}.partition.fields.{field}: {why}")
        return members

    @field_validator("members")
    @classmethod
    def _distinct(cls, members: list[Member]) -> list[Member]:
        seen: set[str] = set()
        for member in members:
            if member.asset_key in seen:
                via = f" (through alias {member.alias!r})" if member.alias else ""
                raise ValueError(f"asset {member.asset_key!r} appears twice in the group{via}; merge its conditions")
            seen.add(member.asset_key)
        sizes = {w.size_ms for m in members for w in (m.condition.window, m.condition.coverage) if w is not None}
        if len(sizes) > 1:
            raise ValueError("windowed members of one group (watermark or coverage) must use the same window")
        cdc = next((i for i, m in enumerate(members) if m.condition.cdc_window), None)
        if cdc is not None and not sizes:
            raise ValueError(
                f'members.{cdc}.condition.cdcRecoveredTo: "{CDC_WINDOW}" waits for the CDC source to catch up to the '
                "end of the window the group runs for, and this group has no window (no member with watermarkAtLeast "
                "{window} or coverage); give one a window, or name an instant"
            )
        return members

    @model_validator(mode="after")
    def _require_names_members(self) -> Group:
        if self.require is not None:
            check_require(self)
        return self

    @property
    def require_refs(self) -> dict[str, tuple[str, ...]]:
        """Each reference the require tree may make (a member's name, alias or assetKey) and the assets it names."""
        refs: dict[str, list[str]] = {}
        for m in self.members:
            for ref in {m.name, m.alias, m.asset_key} - {None}:
                assert ref is not None
                refs.setdefault(ref, []).append(m.asset_key)
        return {ref: tuple(keys) for ref, keys in refs.items()}

    @model_validator(mode="after")
    def _scheduled(self) -> Group:
        if not self.members and self.schedule is None:
            raise ValueError("a group has members, a schedule, or both")
        if self.schedule is not None and self.window is not None:
            raise ValueError(
                "a scheduled group has no windowed members (watermark or coverage): its window is the tick's"
            )
        if self.partition_by is None and self.partition_timezone is not None:
            raise ValueError("partitionTimezone: the group has no partitionBy whose time values it would place")
        return self

    @property
    def window(self) -> WindowSpec | None:
        """The group's window spec when any member is windowed (all windowed members share the size)."""
        specs = (w for m in self.members for w in (m.condition.window, m.condition.coverage) if w is not None)
        return next(specs, None)

    @property
    def covers(self) -> bool:
        """Whether a member waits for coverage: its windows then trigger one at a time, in order."""
        return any(m.condition.coverage is not None for m in self.members)

    @property
    def asset_keys(self) -> list[str]:
        return [m.asset_key for m in self.members]

    @property
    def partitioned_members(self) -> list[Member]:
        """The members whose partitions the group keys on (none when the group has no partitionBy)."""
        return [m for m in self.members if m.partition is not None] if self.partition_by is not None else []


# A windowed group behind by many windows (one far-future watermark) catches up this many per evaluation.
DEFAULT_RUNS_PER_EVALUATION = 10
MAX_RUNS_PER_EVALUATION = 100


class Policy(BaseModel):
    """How a group's readiness turns into triggers."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    mode: Mode = Mode.ALL_UPDATED
    min_interval_seconds: int = Field(default=0, alias="minIntervalSeconds", ge=0, le=MAX_POLICY_SECONDS)
    quiet_period_seconds: int = Field(default=0, alias="quietPeriodSeconds", ge=0, le=MAX_POLICY_SECONDS)
    backfill: BackfillPolicy = BackfillPolicy.TRIGGER
    start_from: StartFrom = Field(
        default=StartFrom.LATEST,
        alias="startFrom",
        description="where a new or re-enabled rule starts: LATEST fires on the versions already satisfying it, "
        "NEXT_CHANGE waits for a newer one",
    )
    max_runs_per_evaluation: int | None = Field(
        default=None,
        alias="maxRunsPerEvaluation",
        ge=1,
        le=MAX_RUNS_PER_EVALUATION,
        description="catch-up bound of a group stepping through windows (EACH_VERSION or coverage): at most this many "
        "windows behind the newest closed one start per evaluation (a minute); the rest wait, counted in explain "
        f"(default {DEFAULT_RUNS_PER_EVALUATION})",
    )

    max_in_flight: int | None = Field(
        default=None,
        alias="maxInFlight",
        ge=1,
        le=MAX_IN_FLIGHT,
        description="at most this many runs of the rule in flight at once (per partition for a partitioned group's "
        "runs; normal runs, replays and forced runs alike): a claimed trigger past it waits for a slot, in claim "
        "order, shown in explain and the trigger list; absent: no limit",
    )
    max_run_seconds: int | None = Field(
        default=None,
        alias="maxRunSeconds",
        ge=1,
        le=MAX_POLICY_SECONDS,
        description="with maxInFlight: a run that has not reported its end this long after it took its slot no "
        f"longer counts as in flight (default {DEFAULT_MAX_RUN_SECONDS})",
    )

    @model_validator(mode="after")
    def _run_seconds_bound_a_slot(self) -> Policy:
        if self.max_run_seconds is not None and self.max_in_flight is None:
            raise ValueError(
                "maxRunSeconds bounds how long a run holds one of maxInFlight's slots; set maxInFlight too, or drop "
                "maxRunSeconds"
            )
        return self

    @property
    def slot_limit(self) -> SlotLimit | None:
        """The rule's limit of runs in flight, or None when it has none."""
        if self.max_in_flight is None:
            return None
        seconds = self.max_run_seconds if self.max_run_seconds is not None else DEFAULT_MAX_RUN_SECONDS
        return SlotLimit(self.max_in_flight, seconds * 1000)

    @property
    def runs_per_evaluation(self) -> int:
        """The catch-up bound in force: the rule's ``maxRunsPerEvaluation``, else the default."""
        return self.max_runs_per_evaluation or DEFAULT_RUNS_PER_EVALUATION


class Rule(BaseModel):
    """A downstream run's dependencies: a target, groups of members, a policy."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    rule_id: str = Field(alias="ruleId")
    description: str | None = Field(default=None, max_length=1024)
    groups: list[Group] = Field(min_length=1, max_length=MAX_GROUPS)
    policy: Policy = Field(default_factory=Policy)
    target: RuleTarget = Field(description="where the run starts: one of the target types, chosen by 'type'")
    enabled: bool = True
    freshness: Freshness | None = Field(
        default=None, description="when the rule is overdue: a daily deadline (expectedBy) and/or maxWaitSeconds"
    )
    outlets: list[str] = Field(
        default_factory=list,
        max_length=MAX_RULE_OUTLETS,
        description="asset keys or key prefixes the run may report as outlets with its completion token "
        "(management credentials are not confined); empty: the run reports no outlets with its token",
    )
    confirm: ConfirmSpec | None = Field(
        default=None,
        description="a run is confirmed by its commit to an outlet carrying its trigger key (lakehook.trigger-key); "
        "one not confirmed withinSeconds after it started is NOT_ADVANCED. Needs outlets",
    )

    @field_validator("freshness")
    @classmethod
    def _freshness_of_groups(cls, value: Freshness | None, info: ValidationInfo) -> Freshness | None:
        partitioned = [g.group_id for g in info.data.get("groups") or () if g.partition_by is not None]
        if value is None:
            return value
        if not partitioned and value.partition_max_age_seconds is not None and "groups" in info.data:
            raise ValueError("partitionMaxAgeSeconds is a promise of a rule with a partitioned group (partitionBy)")
        return value

    @field_validator("outlets")
    @classmethod
    def _outlets(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(validate_outlet_entry(v) for v in value))

    @field_validator("rule_id")
    @classmethod
    def _id(cls, value: str) -> str:
        return validate_id(value, "ruleId")

    @field_validator("policy")
    @classmethod
    def _partitioned_mode(cls, policy: Policy, info: ValidationInfo) -> Policy:
        groups = [g for g in info.data.get("groups") or () if g.partition_by is not None]
        if policy.mode is Mode.EACH_VERSION:
            for group in groups:
                _each_version_per_partition(group, policy.start_from)
        return policy

    @field_validator("groups")
    @classmethod
    def _groups(cls, groups: list[Group]) -> list[Group]:
        ids = [g.group_id for g in groups]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"groupId must be unique within the rule; {', '.join(twice)} appears twice")
        assets = {m.asset_key for g in groups for m in g.members}
        if len(assets) > MAX_ASSETS_PER_RULE:
            raise ValueError(
                f"a rule may name at most {MAX_ASSETS_PER_RULE} distinct assets, this one names {len(assets)}"
            )
        return groups

    @model_validator(mode="after")
    def _schedules_fire_per_tick(self) -> Rule:
        scheduled = [g.group_id for g in self.groups if g.schedule is not None]
        if scheduled and self.policy.mode is Mode.EACH_VERSION:
            raise ValueError(
                f"group {scheduled[0]} has a schedule: a scheduled group runs once per tick, not once per version "
                "(EACH_VERSION)"
            )
        return self

    @model_validator(mode="after")
    def _confirmed_inputs_judged_on_the_newest(self) -> Rule:
        if self.policy.mode is not Mode.EACH_VERSION:
            return self
        for group in self.groups:
            for i, member in enumerate(group.members):
                if member.condition.confirmation_status is not None:
                    raise ValueError(
                        f"group {group.group_id}: members.{i}.condition.confirmationStatus is judged on the version "
                        "the member pins now; EACH_VERSION steps through older versions, whose confirmation is not "
                        "kept: use ALL_UPDATED or ANY_UPDATED, or leave confirmationStatus out"
                    )
        return self

    @model_validator(mode="after")
    def _require_has_a_mode(self) -> Rule:
        _require_in_mode(self)
        return self

    @model_validator(mode="after")
    def _confirmed_by_outlets(self) -> Rule:
        if self.confirm is not None and not self.outlets:
            raise ValueError(
                "confirm: a run is confirmed by its commit to one of the rule's outlets; declare outlets (the tables "
                "the run writes) to confirm it"
            )
        return self

    @model_validator(mode="after")
    def _size(self) -> Rule:
        size = len(self.to_json())
        if size > MAX_RULE_BYTES:
            raise ValueError(f"the rule is {size} bytes as JSON; the limit is {MAX_RULE_BYTES}")
        return self

    @classmethod
    def from_stored(cls, text: str | bytes) -> Rule:
        """A rule read back from the store: a target that no longer validates loads as UnusableTarget."""
        return cls.model_validate_json(text, context=STORED_CONTEXT)

    @property
    def asset_keys(self) -> list[str]:
        """Every distinct member asset, in first-seen order."""
        return list(dict.fromkeys(m.asset_key for g in self.groups for m in g.members))

    def group(self, group_id: str) -> Group | None:
        return next((g for g in self.groups if g.group_id == group_id), None)

    def groups_with(self, asset_key: str) -> list[Group]:
        return [g for g in self.groups if asset_key in g.asset_keys]

    def spans_partitions(self, group: Group) -> bool:
        """Whether each partition of ``group`` is its own window (its time span, docs/partitions.md): a partitioned
        group with a coverage member, or an EACH_VERSION one with a watermark window (each commit of a partition
        runs, in order, once the watermark closed the partition's span). Other partitioned groups with a window step
        through the windows the watermark closes, as an unpartitioned group does."""
        if group.partition_by is None:
            return False
        return group.covers or (self.policy.mode is Mode.EACH_VERSION and group.window is not None)

    def to_json(self) -> str:
        return json.dumps(json_form(self), separators=(",", ":"), sort_keys=True)


def _each_version_per_partition(group: Group, start_from: StartFrom) -> None:
    """EACH_VERSION per partition runs each data commit touching a partition, in order: a partition's versions are
    its partitioned members' commits (a rollup's: those touching any of its units, from the one that completed it),
    so a group whose partition runs by a tick is refused (as an unpartitioned EACH_VERSION group with a schedule is).
    A watermark window member is taken: each partition's window is then its own time span, and its commits run once
    the watermark closed it (:meth:`Rule.spans_partitions`, docs/partitions.md, "Schedules and windows per
    partition"). With startFrom NEXT_CHANGE a rollup member is refused (:func:`_rollup_from_next_change`)."""
    where = f"mode: group {group.group_id} has partitionBy"
    if group.schedule is not None:
        raise ValueError(
            f"{where} and a schedule; EACH_VERSION runs a partition once per commit touching it, not per tick (use "
            "ALL_UPDATED or ANY_UPDATED)"
        )
    if start_from is StartFrom.NEXT_CHANGE:
        _rollup_from_next_change(group, where)


def _rollup_from_next_change(group: Group, where: str) -> None:
    """EACH_VERSION with startFrom NEXT_CHANGE and a rollup member: a partition's first run after the start is the
    first commit after it at which its rollup is complete, which needs each unit's commits before the start, and
    only the newest of those is kept (docs/partitions.md, "EACH_VERSION with a rollup member")."""
    assert group.partition_by is not None
    for i, member in enumerate(group.members):
        if member.partition is not None and member.partition.rollup_fields(group.partition_by):
            raise ValueError(
                f"{where} and startFrom is NEXT_CHANGE; members.{i} rolls up (complete): its first run after the "
                "start would be the first commit after it at which every unit it waits for has one, and which units "
                "had one before the start is not kept per version (only each unit's newest commit). Use startFrom "
                "LATEST (each partition then runs from the commit that completed it, in order), or ALL_UPDATED or "
                "ANY_UPDATED with NEXT_CHANGE"
            )


def _require_in_mode(rule: Rule) -> None:
    """EACH_VERSION steps every member through each of its versions in order, and backfill SKIP absorbs every
    member's versions: neither is defined for members the tree lets not hold (they have no version to step)."""
    group = next((g for g in rule.groups if g.require is not None), None)
    if group is None:
        return
    if rule.policy.mode is Mode.EACH_VERSION:
        raise ValueError(
            f"mode: group {group.group_id} has require; EACH_VERSION runs every member's next version in order, and a "
            "member the tree lets not hold has no next version to run: use ALL_UPDATED or ANY_UPDATED"
        )
    if rule.policy.backfill is BackfillPolicy.SKIP:
        raise ValueError(
            f"backfill: group {group.group_id} has require; backfill SKIP absorbs every member's versions, which is "
            "not defined for members the tree lets not hold"
        )
