"""Read the source health of assets (domain.source_health) for explain, the freshness check and the asset view.

One poll status read per asset asked about, or one batch for many (:meth:`SourceHealths.read`); an asset that is not
polled has none: its health is None. Each asset is read once per :class:`SourceHealths` (a use case makes one per
answer or check)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from lakehook.answers.base import SourceHealthAnswer
from lakehook.answers.explain import GroupExplanation
from lakehook.domain.notice_state import PollCadence
from lakehook.domain.snapshots import PollStatus
from lakehook.domain.source_health import Health, SourceHealth, cannot_decide, source_health, with_notices
from lakehook.domain.time import now_ms
from lakehook.observability import logger
from lakehook.ports.lakehouse import PollStatusStore
from lakehook.ports.notices import NoticeStore


class SourceHealths:
    """The source health of assets, each read once; an unreadable poll status counts as unknown (None). With
    ``notices``, a polled source is joined with its commit notices (one more read per polled asset: its
    registration item), so a table whose notices stopped is LAGGING (domain.source_health.with_notices)."""

    def __init__(
        self,
        statuses: PollStatusStore,
        notices: NoticeStore | None = None,
        cadence: PollCadence | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._statuses = statuses
        self._notices = notices
        self._cadence = cadence or PollCadence()
        self._clock = clock
        self._known: dict[str, SourceHealth | None] = {}

    def read(self, asset_keys: Collection[str]) -> SourceHealths:
        """Read the statuses of ``asset_keys`` not read yet at once (one batch on DynamoDB); answers itself."""
        wanted = [k for k in dict.fromkeys(asset_keys) if k not in self._known]
        if wanted:
            try:
                found = self._statuses.get_many(wanted)
            except Exception:  # left to one read each, which counts an unreadable one as unknown
                logger.exception("poll statuses unreadable", extra={"asset_keys": wanted[:10]})
                return self
            self._known.update({k: self._joined(k, found.get(k)) for k in wanted})
        return self

    def of(self, asset_key: str) -> SourceHealth | None:
        if asset_key not in self._known:
            try:
                self._known[asset_key] = self._joined(asset_key, self._statuses.get(asset_key))
            except Exception:  # a status that cannot be read only costs what it would have said
                logger.exception("poll status unreadable", extra={"asset_key": asset_key})
                self._known[asset_key] = None
        return self._known[asset_key]

    def _joined(self, asset_key: str, status: PollStatus | None) -> SourceHealth | None:
        health = source_health(status)
        if health is None or self._notices is None:
            return health
        try:
            notices = self._notices.notices(asset_key)
        except Exception:  # the notices that cannot be read only cost what they would have said
            logger.exception("notice state unreadable", extra={"asset_key": asset_key})
            return health
        return with_notices(health, notices, self._clock(), self._cadence)

    def untrusted(self, asset_keys: Iterable[str]) -> list[SourceHealth]:
        """The sources among ``asset_keys`` a rule cannot decide on (BLOCKED or GAP), in the order given."""
        return [h for k in dict.fromkeys(asset_keys) if (h := self.of(k)) is not None and not h.trusted]

    def cause(self, asset_keys: Iterable[str]) -> str | None:
        """What an overdue promise over ``asset_keys`` may be caused by: the first untrusted source, described."""
        found = self.untrusted(asset_keys)
        return found[0].describe() if found else None


def with_source_health(group: GroupExplanation, ready: bool, healths: SourceHealths) -> GroupExplanation:
    """A group's explanation with its members' source health where it is not HEALTHY; a group that is not READY and
    has a member whose source is BLOCKED or GAP says it cannot decide, and why (the resolver's own reason kept as
    ``waitingReason``)."""
    for member in group.members:
        health = healths.of(member.asset_key)
        if health is not None and health.state is not Health.HEALTHY:
            member.source_health = SourceHealthAnswer.from_domain(health)
    untrusted = healths.untrusted(m.asset_key for m in group.members)
    if untrusted and not ready:
        group.waiting_reason = group.reason
        group.reason = cannot_decide(untrusted[0])
        group.cannot_decide = [SourceHealthAnswer.from_domain(h) for h in untrusted]
    return group
