"""Which of an asset's recorded events a listing answers: those received in ``[start, end)``, or those whose
snapshot's order (the asset's order of versions: the snapshot id, an Iceberg table's sequence number) is within
``[fromVersion, toVersion]``. One kind of range a listing: each is a key range of its own index, so neither is a
filter over everything recorded."""

from __future__ import annotations

from dataclasses import dataclass

from lakehook.domain.errors import ValidationError
from lakehook.domain.events import AssetEvent
from lakehook.domain.limits import MAX_LONG

LAST_INSTANT = 10**15 - 1  # the largest received time a key holds (15 digits: past year 9999)


@dataclass(frozen=True)
class EventRange:
    """``start``/``end``: epoch ms of the received time, ``[start, end)``; ``from_version``/``to_version``: the
    snapshot order, both ends included. None: that end is open. No bound at all lists every event."""

    start: int | None = None
    end: int | None = None
    from_version: int | None = None
    to_version: int | None = None

    def __post_init__(self) -> None:
        timed = self.start is not None or self.end is not None
        if timed and self.by_version:
            raise ValidationError(
                "fromVersion/toVersion and start/end cannot be combined: list by one range", field="fromVersion"
            )
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValidationError("end must be after start", field="end")
        if self.end is not None and self.end <= 0:  # [.., epoch) holds nothing; its key range would be reversed
            raise ValidationError("end must be after 1970-01-01T00:00:00Z (end is not included)", field="end")
        if self.from_version is not None and self.to_version is not None and self.to_version < self.from_version:
            raise ValidationError("toVersion must not be below fromVersion", field="toVersion")
        for name, value in (("fromVersion", self.from_version), ("toVersion", self.to_version)):
            if value is not None and not 0 <= value <= MAX_LONG:
                raise ValidationError(f"{name} must be within 0 … {MAX_LONG}", field=name)

    @property
    def by_version(self) -> bool:
        return self.from_version is not None or self.to_version is not None

    @property
    def received_bounds(self) -> tuple[int, int]:
        """The received times listed, both included (epoch ms)."""
        start = 0 if self.start is None else self.start
        return start, LAST_INSTANT if self.end is None else self.end - 1

    @property
    def version_bounds(self) -> tuple[int, int]:
        """The snapshot orders listed, both included."""
        return (self.from_version or 0), (MAX_LONG if self.to_version is None else self.to_version)

    def scope(self) -> str:
        """What a page token of this listing is bound to: a token of another range is refused."""
        if self.by_version:
            low, high = self.version_bounds
            return f"v{low}-{high}"
        if self.start is None and self.end is None:
            return ""
        low, high = self.received_bounds
        return f"t{low}-{high}"

    def holds(self, event: AssetEvent, received_at: int) -> bool:
        """Whether a recorded event is in the range (what the store's key range selects)."""
        if self.by_version:
            order = event.snapshot_order
            low, high = self.version_bounds
            return order is not None and low <= order <= high
        low, high = self.received_bounds
        return low <= received_at <= high


EVERY_EVENT = EventRange()
