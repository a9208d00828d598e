"""The deferral sweep's one entry (DeferralSweepFunction): which of its two schedules fired, and what each does.

Every minute it marks the due quiet-period, cooldown and schedule re-evaluations (which wakes the resolver via the
stream); on its freshness schedule (Input ``{"check": "freshness"}``, every 5 minutes) it counts what is overdue
(rules and assets), measures the longest waits for the metrics and alarms, and marks NOT_ADVANCED the started runs
whose confirm window passed with no outlet commit carrying their trigger key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from lakehook.observability import logger

if TYPE_CHECKING:  # the freshness check loads on its schedule, not at the sweep's init
    from lakehook.usecases.freshness import CheckFreshness, FreshnessReport

FRESHNESS_CHECK = "freshness"  # the Freshness schedule's Input: {"check": "freshness"}


class SweepOnSchedule:
    """Answers what the handler returns; each part is built on first use (the minute's sweep builds no freshness
    check)."""

    def __init__(
        self,
        sweep_deferred: Callable[[], int],
        check_freshness: Callable[[], CheckFreshness],
        publish: Callable[[FreshnessReport], None],
        sweep_not_advanced: Callable[[], list[str]],
    ) -> None:
        self._sweep_deferred = sweep_deferred
        self._check_freshness = check_freshness
        self._publish = publish
        self._sweep_not_advanced = sweep_not_advanced

    def __call__(self, event: Mapping[str, Any]) -> dict[str, Any]:
        if event.get("check") == FRESHNESS_CHECK:
            return self.freshness()
        due = self._sweep_deferred()
        logger.info("deferrals swept", extra={"due": due})
        return {"due": due}

    def freshness(self) -> dict[str, Any]:
        """The freshness schedule: overdue rules and assets, the longest waits, then the runs not advanced."""
        report = self._check_freshness()()
        self._publish(report)
        if report.rules or report.assets or report.unchecked or report.untrusted:
            logger.warning("overdue", extra=report.to_log())
        logger.info("longest waits", extra=report.waits())
        not_advanced = self._sweep_not_advanced()
        return {
            "notAdvanced": len(not_advanced),
            "rulesOverdue": sorted(report.rules),
            "assetsOverdue": [o.asset_key for o in report.assets],
            "rulesUnchecked": sorted(report.unchecked),
            "waits": report.waits(),
        }
