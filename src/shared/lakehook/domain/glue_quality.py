"""AWS Glue Data Quality verdicts: a "Data Quality Evaluation Results Available" event as a quality verdict.

Glue Data Quality sends the event (source ``aws.glue-dataquality``) to the default bus when a ruleset evaluation
ends. Its documented shape (the Glue developer guide, "Setting up alerts, deployments, and scheduling"):

```json
{"source": "aws.glue-dataquality", "detail-type": "Data Quality Evaluation Results Available",
 "account": "123456789012", "region": "us-west-2", "time": "2017-09-07T18:57:21Z",
 "detail": {"context": {"contextType": "GLUE_DATA_CATALOG", "runId": "dqrun-1", "databaseName": "db-123",
                        "tableName": "table-123", "catalogId": "123456789012"},
            "resultID": "dqresult-1", "rulesetNames": ["ruleset1"], "state": "SUCCEEDED", "score": 1.00,
            "rulesSucceeded": 100, "rulesFailed": 0, "rulesSkipped": 0}}
```

An evaluation inside a Glue job (``contextType: GLUE_JOB``) names a job, not a catalog table: it judges a frame
lakehook cannot tie to a table, and is answered as such. The verdict is FAILED when ``state`` is ``FAILED`` or any
rule failed, else PASSED (``SUCCEEDED``, or ``PASSED``).

The event names no snapshot, so the verdict is pinned to the one the evaluation read: the asset's newest snapshot
committed at or before the evaluation's start. When a snapshot was committed between its start and its end (or a
snapshot newer than that one has no commit time), which one the evaluation read is ambiguous: the verdict is not
pinned, and the reason says why. Pure: the use case (``usecases/glue_quality.py``) reads the times and snapshots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakehook.domain.commit_notices import GLUE_SOURCE, CommitNotice, table_watch_key
from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.time import instant_from_json, ms_to_iso

GLUE_DQ_SOURCE = "aws.glue-dataquality"
GLUE_DQ_RESULTS = "Data Quality Evaluation Results Available"
CATALOG_CONTEXT = "GLUE_DATA_CATALOG"
_PASSING_STATES = ("SUCCEEDED", "PASSED")
_STATES = (*_PASSING_STATES, "FAILED")
_MAX_TEXT = 255  # Glue's length limit of names and result ids
_MAX_RULESETS = 20


class GlueQualityError(ValueError):
    """A Glue Data Quality event that cannot be read as a verdict; the message names the field."""


@dataclass(frozen=True)
class EvaluationTimes:
    """When an evaluation started and completed (epoch ms), as ``GetDataQualityResult`` answers them."""

    started_at: int
    completed_at: int


@dataclass(frozen=True)
class GlueQualityResult:
    """What one evaluation judged and found."""

    result_id: str
    database: str
    table: str
    catalog_id: str
    region: str
    ruleset_names: tuple[str, ...]
    state: str
    score: float | None
    rules_succeeded: int
    rules_failed: int
    rules_skipped: int
    available_at: int  # the event's time: when the results became available

    @property
    def passed(self) -> bool:
        return self.state in _PASSING_STATES and self.rules_failed == 0

    @property
    def event_type(self) -> EventType:
        return EventType.QUALITY_CHECK_PASSED if self.passed else EventType.QUALITY_CHECK_FAILED

    @property
    def described(self) -> str:
        return f"glue table {self.database}.{self.table}"

    def notice(self) -> CommitNotice:
        """The table as the commit-notice index finds it: registrations of a Glue catalog of this account."""
        return CommitNotice(
            table_watch_key(f"{self.database}.{self.table}"), GLUE_SOURCE, self.described, self.region, self.catalog_id
        )


@dataclass(frozen=True)
class Pinned:
    """The snapshot the evaluation read (its SNAPSHOT_COMMITTED event), and how that was decided."""

    snapshot: AssetEvent
    reason: str


@dataclass(frozen=True)
class NotPinned:
    """No snapshot can be named as the one the evaluation read, and why."""

    reason: str


def read_glue_quality(event: Mapping[str, Any]) -> GlueQualityResult:
    """The verdict of a "Data Quality Evaluation Results Available" event; raises GlueQualityError naming what is
    missing or malformed (never anything else)."""
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise GlueQualityError("detail: the event has no detail object")
    context = detail.get("context")
    if not isinstance(context, Mapping):
        raise GlueQualityError("detail.context: the event has no context object")
    kind = context.get("contextType")
    if kind != CATALOG_CONTEXT:
        raise GlueQualityError(
            f"detail.context.contextType: {str(kind)[:64]!r} names no catalog table (only {CATALOG_CONTEXT} does: "
            "an evaluation inside a Glue job judges a frame, not a table lakehook knows)"
        )
    state = detail.get("state")
    if state not in _STATES:
        raise GlueQualityError(f"detail.state: {str(state)[:64]!r} is not one of {', '.join(_STATES)}")
    return GlueQualityResult(
        result_id=_name(detail, "resultID", "detail"),
        database=_name(context, "databaseName", "detail.context"),
        table=_name(context, "tableName", "detail.context"),
        catalog_id=_optional_name(context, "catalogId", "detail.context") or _optional_name(event, "account", ""),
        region=_optional_name(event, "region", ""),
        ruleset_names=_ruleset_names(detail.get("rulesetNames")),
        state=state,
        score=_score(detail.get("score")),
        rules_succeeded=_count(detail, "rulesSucceeded"),
        rules_failed=_count(detail, "rulesFailed"),
        rules_skipped=_count(detail, "rulesSkipped"),
        available_at=_time(event.get("time")),
    )


def pin_evaluation(snapshots: Sequence[AssetEvent], times: EvaluationTimes | None) -> Pinned | NotPinned:
    """The snapshot an evaluation read: the newest (by order) of ``snapshots`` (SNAPSHOT_COMMITTED events of one
    asset, any order) committed at or before its start, unless another was committed before it ended."""
    if times is None:
        return NotPinned("the evaluation's start time could not be read (glue:GetDataQualityResult)")
    start, end = ms_to_iso(times.started_at), ms_to_iso(times.completed_at)
    before = [s for s in snapshots if s.commit_time is not None and s.commit_time <= times.started_at]
    if not before:
        return NotPinned(f"no recorded snapshot was committed at or before the evaluation's start {start}")
    judged = max(before, key=_order)
    later = [s for s in snapshots if _order(s) > _order(judged)]
    during = sorted((s for s in later if s.commit_time is None or s.commit_time <= times.completed_at), key=_order)
    if during:
        other = during[0]
        when = "with no commit time" if other.commit_time is None else f"committed {ms_to_iso(other.commit_time)}"
        return NotPinned(
            f"ambiguous: snapshot {other.snapshot_id} ({when}) is newer than snapshot {judged.snapshot_id}, the "
            f"newest committed at or before the evaluation's start {start}, and not after its end {end}: "
            "either may be the one it read"
        )
    return Pinned(
        judged,
        f"pinned to snapshot {judged.snapshot_id}, the newest committed at or before the evaluation's start {start} "
        f"(none committed until its end {end}); the event names no snapshot",
    )


def _order(event: AssetEvent) -> int:
    return event.snapshot_order if event.snapshot_order is not None else -1


def _name(data: Mapping[str, Any], key: str, where: str) -> str:
    value = _optional_name(data, key, where)
    if not value:
        raise GlueQualityError(f"{where + '.' if where else ''}{key} is required")
    return value


def _optional_name(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > _MAX_TEXT or not value.isprintable():
        raise GlueQualityError(f"{where + '.' if where else ''}{key} must be a name of 1-{_MAX_TEXT} characters")
    return value


def _ruleset_names(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > _MAX_RULESETS:
        raise GlueQualityError(f"detail.rulesetNames must be a list of at most {_MAX_RULESETS} names")
    return tuple(_name({"name": v}, "name", "detail.rulesetNames[]") for v in value)


def _score(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise GlueQualityError("detail.score must be a number from 0 to 1")
    return float(value)


def _count(detail: Mapping[str, Any], key: str) -> int:
    value = detail.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1_000_000:
        raise GlueQualityError(f"detail.{key} must be a whole number from 0 to 1000000")
    return value


def _time(value: Any) -> int:
    try:
        return instant_from_json(value)
    except (TypeError, ValueError) as exc:
        raise GlueQualityError(f"time: {exc}") from exc
