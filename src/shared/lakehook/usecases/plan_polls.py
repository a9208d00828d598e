"""Fan-out for pollers: page through registered tables and queue the ones a tick polls, in small batches.

The planner does no lakehouse I/O, so one invocation covers thousands of tables in seconds; the workers'
event source bounds how many poll at once (``ScalingConfig.MaximumConcurrency`` in template.yaml).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lakehook.domain.assets import TABLE_FORMATS
from lakehook.domain.commit_notices import NoticeIgnored, read_notice
from lakehook.domain.errors import ValidationError
from lakehook.domain.notice_state import NoticeHealth, PollCadence, due, unannounced
from lakehook.domain.time import now_ms, parse_instant_ms
from lakehook.observability import MetricName, logger
from lakehook.ports import AssetRegistry
from lakehook.ports.notices import NoticeStore, PlannedAsset
from lakehook.ports.queue import WorkQueue


class WorkMode(StrEnum):
    POLL = "poll"  # the frequent, cheap pointer check and new snapshots
    COMPENSATE = "compensate"  # compare each table's latest snapshot with the state and backfill
    FILL = "fill"  # read one table from a given snapshot on (a gap an EACH_VERSION rule waits on)


@dataclass(frozen=True)
class PlanReport:
    mode: WorkMode
    assets: int
    messages: int


def parse_work(body: dict[str, Any]) -> tuple[WorkMode, list[str]]:
    """A queued message: ``{"mode": "poll" | "compensate" | "fill", "assetKeys": [...]}`` (a fill also carries
    ``"after": {"snapshotId", "order"}``, see :func:`parse_after`)."""
    try:
        mode = WorkMode(body.get("mode", WorkMode.POLL))
    except ValueError as exc:
        raise ValidationError(f"unknown mode {body.get('mode')!r}", field="mode") from exc
    keys = body.get("assetKeys")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ValidationError("assetKeys must be a list of asset keys", field="assetKeys")
    return mode, keys


def parse_after(body: dict[str, Any]) -> dict[str, int]:
    """A fill message's starting point: the snapshot before the gap, ``{"snapshotId": …, "order": …}``."""
    after = body.get("after")
    if (
        not isinstance(after, dict)
        or not isinstance(after.get("snapshotId"), int)
        or not isinstance(after.get("order"), int)
        or after["snapshotId"] < 0
        or after["order"] < 0
    ):
        raise ValidationError("a fill needs after: {snapshotId, order}, non-negative integers", field="after")
    return {"snapshotId": after["snapshotId"], "order": after["order"]}


def parse_safety_net(body: dict[str, Any]) -> bool:
    """Whether a poll message is the schedule's safety net for tables whose notices arrive (``"safetyNet": true``):
    a new commit it finds, older than a notice takes, shows a lost notice."""
    flag = body.get("safetyNet", False)
    if not isinstance(flag, bool):
        raise ValidationError("safetyNet must be true or false", field="safetyNet")
    return flag


class PlanPolls:
    """Queue the registered tables with a source that the tick polls, ``per_message`` asset keys per message.

    A poll tick takes each table on its own interval (``domain.notice_state``): the safety net while its commit
    notices arrive (queued in messages marked ``safetyNet``), else its ``pollIntervalSeconds`` or the stack's
    default. A compensation tick takes every table.
    """

    def __init__(
        self,
        notices: NoticeStore,
        queue: WorkQueue,
        cadence: PollCadence | None = None,
        *,
        per_message: int = 10,
        page_size: int = 500,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._notices = notices
        self._queue = queue
        self._cadence = cadence or PollCadence()
        self._per_message = per_message
        self._page_size = page_size
        self._clock = clock

    def __call__(self, mode: WorkMode, tick_ms: int | None = None) -> PlanReport:
        tick = self._clock() if tick_ms is None else tick_ms
        assets = 0
        messages = 0
        token: str | None = None
        while True:
            page = self._notices.list_planned(self._page_size, token)
            fast, safety_net = self._due(mode, page.items, tick)
            batch = self._messages(mode, fast, {}) + self._messages(mode, safety_net, {"safetyNet": True})
            if batch:
                messages += self._queue.send(batch)
            assets += len(fast) + len(safety_net)
            token = page.next_token
            if token is None:
                return PlanReport(mode, assets, messages)

    def _due(self, mode: WorkMode, planned: list[PlannedAsset], tick: int) -> tuple[list[str], list[str]]:
        """The page's tables this tick polls: (at their fast interval, as the safety net)."""
        fast: list[str] = []
        safety_net: list[str] = []
        for item in planned:
            asset = item.registration
            if asset.source is None or asset.format not in TABLE_FORMATS:
                continue
            if mode is not WorkMode.POLL:
                fast.append(asset.asset_key)
                continue
            interval = item.notices.interval_seconds(asset.poll_interval_seconds, tick, self._cadence)
            if due(asset.asset_key, interval, tick):
                arriving = item.notices.health(tick, self._cadence) is NoticeHealth.ARRIVING
                (safety_net if arriving else fast).append(asset.asset_key)
        return fast, safety_net

    def _messages(self, mode: WorkMode, keys: list[str], extra: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"mode": mode.value, "assetKeys": keys[i : i + self._per_message], **extra}
            for i in range(0, len(keys), self._per_message)
        ]


@dataclass(frozen=True)
class NoticeReport:
    """What a commit notice led to: the tables queued for a poll, or why none was."""

    described: str
    asset_keys: tuple[str, ...] = ()
    ignored: str | None = None

    def to_log(self) -> dict[str, Any]:
        found: dict[str, Any] = {"notice": self.described, "assetKeys": list(self.asset_keys)}
        if self.ignored:
            found["ignored"] = self.ignored
        return found


class PlanNotifiedPolls:
    """A commit the lakehouse announced (Glue table change, S3 commit file): queue a poll of exactly the tables
    registered under it, in one message, for the same workers, offsets and deduplication as the schedule.

    An event that names no registered table, or is no commit, is ignored with the reason (an asynchronous
    invocation must not fail on it: it would only be retried). Only a failure of the store or the queue raises.
    """

    def __init__(
        self,
        registry: AssetRegistry,
        queue: WorkQueue,
        notices: NoticeStore | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._registry = registry
        self._queue = queue
        self._notices = notices
        self._clock = clock

    def __call__(self, event: Mapping[str, Any]) -> NoticeReport:
        notice = read_notice(event)
        if isinstance(notice, NoticeIgnored):
            return NoticeReport(
                described=f"{event.get('source')!r} / {event.get('detail-type')!r}", ignored=notice.reason
            )
        entries = [e for e in self._registry.assets_watching(notice.watch_key) if notice.concerns(e)]
        keys = tuple(sorted({e.asset_key for e in entries}))
        if not keys:
            return NoticeReport(notice.described, ignored=f"no registered table is watched as {notice.watch_key}")
        self._queue.send([{"mode": WorkMode.POLL.value, "assetKeys": list(keys)}])
        if self._notices is not None:  # after the poll is queued: a failure here retries a harmless poll
            self._notices.record_notice(keys, self._clock())
        return NoticeReport(notice.described, keys)


class RunPollWork:
    """A worker's share: load the queued tables' registrations and poll (or compensate) them.

    Each table is isolated inside ``poll`` / ``compensate`` (a broken one gets a poll error and
    backoff); only a failure of lakehook's own store escapes, so SQS redelivers the message.
    """

    def __init__(
        self,
        registry: AssetRegistry,
        poll: Any,
        compensate: Any,
        fill: Any = None,
        notices: NoticeStore | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._registry = registry
        self._poll = poll
        self._compensate = compensate
        self._fill = fill
        self._notices = notices
        self._clock = clock

    def __call__(
        self, mode: WorkMode, asset_keys: list[str], after: dict[str, int] | None = None, *, safety_net: bool = False
    ) -> dict[str, Any]:
        assets = [a for a in (self._registry.get_asset(k) for k in asset_keys) if a is not None and a.source]
        if mode is WorkMode.FILL:
            if self._fill is None or after is None:
                raise ValidationError("a fill needs a filler and a starting point", field="after")
            found = [self._fill(a, after) for a in assets]
            return {"mode": mode.value, "assets": len(assets), "missedEvents": sum(r.missed_events for r in found)}
        if mode is WorkMode.COMPENSATE:
            report = self._compensate(assets)
            return {"mode": mode.value, "assets": len(assets), "missedEvents": report.missed_events}
        results = self._poll(assets)
        summary: dict[str, Any] = {
            "mode": mode.value,
            "assets": len(assets),
            "outcomes": sorted(str(r.outcome.value) for r in results),
        }
        if safety_net:
            missed = self._missed_notices(results)
            summary["noticesMissed"] = missed
        return summary

    def _missed_notices(self, results: list[Any]) -> list[str]:
        """The tables whose safety-net poll found a commit no notice announced: QUIET, polled fast from now."""
        now = self._clock()
        missed = sorted(r.asset_key for r in results if unannounced(r.first_commit_ms, now))
        for key in missed:
            logger.warning(
                "commit notice missed",
                extra={"asset_key": key, "reason": "the safety-net poll found a commit no notice announced"},
            )
            if self._notices is not None:
                self._notices.record_missed(key, now)
        return missed


# The sources of the commit notices EventBridge hands the poll planner (a Glue table change, an S3 commit file).
NOTICE_SOURCES = ("aws.glue", "aws.s3")


def scheduled_tick(event: Mapping[str, Any]) -> int | None:
    """The tick a Scheduled Event stands for (its ``time``: the same on a retry of it), else None (now)."""
    try:
        return parse_instant_ms(event["time"])
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True)
class PlannerAnswer:
    """What the poll planner did with one event: its answer (returned and logged under ``message``) and the metrics
    it counts once each."""

    answer: dict[str, Any]
    message: str
    counted: tuple[str, ...] = ()


class PlanPollsFor:
    """The poll planner's one entry (PollPlannerFunction): a commit notice the lakehouse announced (source
    ``aws.glue`` or ``aws.s3``) queues exactly the tables it names; anything else is the schedule's tick, whose
    ``mode`` (its Input; a bare Scheduled Event polls) plans every table due. The planners are built on first use,
    so a tick never builds the notice planner's parts, nor a notice the tick's."""

    def __init__(self, plan: Callable[[], PlanPolls], notified: Callable[[], PlanNotifiedPolls]) -> None:
        self._plan = plan
        self._notified = notified

    def __call__(self, event: Mapping[str, Any]) -> PlannerAnswer:
        if event.get("source") in NOTICE_SOURCES:
            notice = self._notified()(event)
            counted = MetricName.COMMIT_NOTICE_IGNORED if notice.ignored else MetricName.COMMIT_NOTICE_POLLED
            return PlannerAnswer(notice.to_log(), "commit notice", (counted,))
        mode = WorkMode(event.get("mode", WorkMode.POLL))
        report = self._plan()(mode, scheduled_tick(event))
        return PlannerAnswer(
            {"mode": mode.value, "assets": report.assets, "messages": report.messages}, "polls planned"
        )
