"""Glue Data Quality's "Data Quality Evaluation Results Available" events, taken by the bus ingest as quality
verdicts on the registered tables they judged (``domain/glue_quality.py`` reads and pins them).

The event is AWS's own (no writer can put an ``aws.`` source), so it needs no producer: it is taken from the
stack's own account only. Its table is found as a Glue commit notice finds it (the registrations watched under
its ``database.table``, of a Glue catalog of its account and region); a table no registration names is answered
``UNMATCHED``, a verdict that cannot be pinned ``NOT_PINNED``, each with the reason, in the function's log line.
A pinned verdict is a QUALITY_CHECK_PASSED / _FAILED event of source EVENTBRIDGE on the snapshot, recorded,
deduplicated and expanded through aliases as any push (its payload says how it was pinned).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lakehook.domain.events import AssetEvent, EventResult, EventType, SourceType
from lakehook.domain.glue_quality import (
    GlueQualityError,
    GlueQualityResult,
    NotPinned,
    Pinned,
    pin_evaluation,
    read_glue_quality,
)
from lakehook.ports import AssetRegistry, AssetStore
from lakehook.ports.aliases import AliasStore
from lakehook.ports.quality import EvaluationTimesReader
from lakehook.usecases.aliases import ingest_through_aliases
from lakehook.usecases.ingest import IngestEvents

UNMATCHED = "UNMATCHED"
NOT_PINNED = "NOT_PINNED"
RECORDED = "RECORDED"


@dataclass(frozen=True)
class GlueQualityOutcome:
    """What one evaluation's event became: per registered table, a verdict recorded or why not."""

    results: list[EventResult] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    rejected: str | None = None

    @property
    def unrecorded(self) -> bool:
        return any(v["status"] != RECORDED for v in self.verdicts)


class IngestGlueQuality:
    def __init__(
        self,
        registry: AssetRegistry,
        store: AssetStore,
        ingest: IngestEvents,
        aliases: AliasStore,
        times: EvaluationTimesReader,
        history_pages: int = 5,
        page_size: int = 100,
    ) -> None:
        self._registry = registry
        self._store = store
        self._ingest = ingest
        self._aliases = aliases
        self._times = times
        self._history_pages = history_pages
        self._page_size = page_size

    def __call__(self, event: Mapping[str, Any], account: str | None, stack_account: str | None) -> GlueQualityOutcome:
        if account is None or account != stack_account:
            return GlueQualityOutcome(
                rejected=f"Glue Data Quality results are taken from the stack's account "
                f"{stack_account or '(unknown)'} only; this one came from {account or '(no account)'}"
            )
        try:
            result = read_glue_quality(event)
        except GlueQualityError as exc:
            return GlueQualityOutcome(rejected=f"Glue Data Quality event: {exc}")
        notice = result.notice()
        keys = sorted({e.asset_key for e in self._registry.assets_watching(notice.watch_key) if notice.concerns(e)})
        if not keys:
            reason = (
                f"no registered table is {result.described} of a Glue catalog of account {result.catalog_id or '?'}"
                f"{' in ' + result.region if result.region else ''} (PUT /assets with its source.table)"
            )
            return GlueQualityOutcome(verdicts=[{**_base(result, None), "status": UNMATCHED, "reason": reason}])
        times = self._times.evaluation_times(result.result_id)
        outcome = GlueQualityOutcome()
        for key in keys:
            self._judge(key, result, times, outcome)
        return outcome

    def _judge(self, key: str, result: GlueQualityResult, times: Any, outcome: GlueQualityOutcome) -> None:
        snapshots, cut = self._snapshots(key, times.started_at if times else None)
        pinned = pin_evaluation(snapshots, times)
        if isinstance(pinned, NotPinned):
            reason = pinned.reason
            if cut:  # the bound of the reads, not the table's history, may be why: say so
                reason += (
                    f" (only the newest {self._history_pages * self._page_size} events recorded for it were read; "
                    "older ones were not)"
                )
            outcome.verdicts.append({**_base(result, key), "status": NOT_PINNED, "reason": reason})
            return
        raw = [verdict_event(key, result, pinned)]
        results = ingest_through_aliases(raw, self._ingest, self._aliases, SourceType.EVENTBRIDGE)
        outcome.results.extend(results)
        outcome.verdicts.append(
            {
                **_base(result, key),
                "status": RECORDED,
                "snapshotId": pinned.snapshot.snapshot_id,
                "reason": pinned.reason,
            }
        )

    def _snapshots(self, key: str, started_at: int | None) -> tuple[list[AssetEvent], bool]:
        """The asset's recorded snapshots, newest recorded first, read until one committed at or before the start
        (and the rest of its page), at most ``history_pages`` pages of events; and whether that bound cut the read
        short (more events were recorded, none read committed at or before the start)."""
        found: list[AssetEvent] = []
        token: str | None = None
        for _ in range(self._history_pages):
            page = self._store.list_events(key, self._page_size, token)
            found.extend(r.event for r in page.items if r.event.event_type is EventType.SNAPSHOT_COMMITTED)
            reached = started_at is not None and any(
                s.commit_time is not None and s.commit_time <= started_at for s in found
            )
            token = page.next_token
            if reached or token is None or started_at is None:
                return found, False
        return found, True


def _base(result: GlueQualityResult, key: str | None) -> dict[str, Any]:
    found: dict[str, Any] = {"resultId": result.result_id, "verdict": result.event_type.value}
    if key is not None:
        found["assetKey"] = key
    else:
        found["table"] = f"{result.database}.{result.table}"
    return found


def verdict_event(asset_key: str, result: GlueQualityResult, pinned: Pinned) -> dict[str, Any]:
    """The QUALITY_CHECK_* event (as pushed) that records the verdict on the pinned snapshot: the result's own
    fields (its score only when Glue gave one) and why that snapshot, under the payload's ``glueDataQuality``."""
    snapshot = pinned.snapshot
    found: dict[str, Any] = {
        "resultId": result.result_id,
        "table": f"{result.database}.{result.table}",
        "catalogId": result.catalog_id,
        "rulesetNames": list(result.ruleset_names),
        "state": result.state,
        "rulesSucceeded": result.rules_succeeded,
        "rulesFailed": result.rules_failed,
        "rulesSkipped": result.rules_skipped,
    }
    if result.score is not None:
        found["score"] = result.score
    event: dict[str, Any] = {
        "eventType": result.event_type.value,
        "assetKey": asset_key,
        "snapshotId": snapshot.snapshot_id,
        "payload": {"glueDataQuality": {**found, "pinned": pinned.reason}},
    }
    if snapshot.sequence_number is not None:
        event["sequenceNumber"] = snapshot.sequence_number
    if snapshot.commit_time is not None:
        event["commitTime"] = snapshot.commit_time
    return event
