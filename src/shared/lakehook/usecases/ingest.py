"""Ingest: validate, authorize, record and advance a batch of events (push, poll, completion)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.coverage import CoverageTooFragmentedError
from lakehook.domain.errors import AuthorizationError, ValidationError
from lakehook.domain.events import AssetEvent, EventResult, EventType, IngestStatus, PushEnvelope, SourceType
from lakehook.domain.partitions import Chunks
from lakehook.domain.producers import Producer
from lakehook.domain.snapshots import partition_parts
from lakehook.domain.spool_buckets import ReadableSpool
from lakehook.domain.state import advance_for, snapshot_record, verdict_touch
from lakehook.domain.time import now_ms
from lakehook.domain.versions import SnapshotRecord
from lakehook.event_metrics import publish_cdc_lag
from lakehook.ports import AdvanceOutcome, AssetStore, Recording
from lakehook.ports.queue import WorkQueue
from lakehook.usecases.coverage import RecordCoverage
from lakehook.usecases.ingest_state import advance_state, apply_change

_VERDICTS = (EventType.QUALITY_CHECK_PASSED, EventType.QUALITY_CHECK_FAILED)
_DUPLICATE_REASON = "this event was recorded before"
_READS = (SourceType.POLL, SourceType.COMPENSATION)  # a read of the table: every read names the same partitions
# A late snapshot when the asset's rules are not looked up (or cannot be read): what holds for every rule.
UNKNOWN_RULES = (
    "EACH_VERSION rules that already ran a newer version skip it (their explain lists it as skipped); the others "
    "run it in order"
)


def describe_validation_error(exc: PydanticValidationError) -> str:
    """One line naming each bad field, in the API's camelCase."""
    parts = []
    for error in exc.errors():
        location = ".".join(str(p) for p in error["loc"]) or "event"
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{location}: {message}")
    return "; ".join(parts)


def parse_event(raw: Any) -> AssetEvent:
    """Parse one raw event; raises pydantic's ValidationError naming the field."""
    return AssetEvent.model_validate(raw)


def verification_request(event: AssetEvent) -> dict[str, Any]:
    """The message that asks the spool verifier to verify a pushed MANIFEST_SEALED."""
    return {"manifestUri": event.manifest_uri, "assetKey": event.asset_key}


class IngestEvents:
    """Record each event once and move its asset's state forward.

    A novel event that advances its state and needs nothing between its record and its advance (no parts, no
    coverage, no verification: a pushed or polled commit, a verdict, a watermark in order) costs one transaction of
    two writes and no read: the record, already settled, and the state's conditional update, both or neither
    (``AssetStore.record_and_advance``). Any other event (or one whose advance the state refuses: that
    transaction is cancelled, nothing written) takes the step-by-step path: one conditional put (the record), one
    conditional update (the state) and one update of the record, the last step: its ``settled`` note. A duplicate
    of a settled event costs one request, the refused record (the transaction or the put), which hands the note back
    (``ALL_OLD``), and writes nothing.
    A redelivery that finds no note (the process died part way) does every step again, each one
    idempotent, so nothing a crash cut short is lost. A quality verdict older than the state's
    newest (STALE) costs one more conditional update: the touch that wakes the resolver
    (:func:`lakehook.domain.state.verdict_touch`). A snapshot older than the state (STALE) is decided for the
    asset's EACH_VERSION rules before the event settles, at the cost its notice states
    (:class:`lakehook.usecases.late_versions.LateSnapshotNotice`). Each state field is guarded by its own order,
    so a redelivered or late older event never rolls one back.

    An ``INTERVAL_COVERED`` event also unites its interval into the coverage store (an unsettled
    duplicate too: the add is idempotent) before its state touch, so the resolver it wakes sees the interval.

    A polled snapshot that touched more partitions than its event holds (``more_partitions``: the reader's chunks
    past the bound) has each chunk recorded as a part item right after the event's record, on every delivery, a
    settled duplicate's too (a push may have recorded the snapshot first, without them): ⌈parts/25⌉ batched
    writes of the same content, whose first write alone wakes the resolver (``AssetStore.record_partition_parts``).
    A polled snapshot that another event (a push) recorded first with other keys has the keys of its own event that
    the first one left out recorded as part 0 (the refused record names the first one's keys, with no read): the
    recorded event and the state keep the push's keys, and the part brings the resolver the rest.
    """

    def __init__(
        self,
        store: AssetStore,
        clock: Callable[[], int] = now_ms,
        coverage: RecordCoverage | None = None,
        verifications: WorkQueue | None = None,
        late: Callable[[str, SnapshotRecord, int], str | None] | None = None,
        readable_spool: ReadableSpool | None = None,
    ) -> None:
        # what a STALE snapshot means for the asset's EACH_VERSION rules, decided as it arrives and answered
        # (usecases.late_versions.LateSnapshotNotice)
        self._late = late
        self._store = store
        self._clock = clock
        self._coverage = coverage
        self._verifications = verifications
        self._readable_spool = readable_spool

    def ingest_raw(
        self, raw_events: Sequence[Any], source: SourceType, producer: Producer | None = None
    ) -> list[EventResult]:
        """Validate and ingest raw JSON events; invalid ones are REJECTED with the field named.

        Every event is validated (ranges, payload size and depth) before any is written, so a bad event
        never leaves a batch half-written: it is answered REJECTED and the others are recorded. A
        producer may write only under its prefixes: if any event names another asset, the whole batch
        is refused with AuthorizationError before anything is recorded.
        """
        parsed: list[AssetEvent | EventResult] = []
        for index, raw in enumerate(raw_events):
            try:
                parsed.append(parse_event(raw))
            except PydanticValidationError as exc:
                parsed.append(
                    EventResult(status=IngestStatus.REJECTED, reason=describe_validation_error(exc), index=index)
                )
        for index, item in enumerate(parsed):
            refusal = self.manifest_refusal(item) if isinstance(item, AssetEvent) else None
            if refusal is not None:  # the whole batch, before anything is recorded, as for a producer's prefixes
                raise ValidationError(f"events[{index}].manifestUri: {refusal}", field=f"events[{index}].manifestUri")
        if producer is not None:
            outside = sorted(
                {e.asset_key for e in parsed if isinstance(e, AssetEvent) and not producer.may_write(e.asset_key)}
            )
            if outside:
                raise AuthorizationError(
                    f"producer {producer.producer_id!r} may not write {', '.join(outside)}: "
                    f"outside its prefixes {producer.asset_key_prefixes}"
                )
        producer_id = producer.producer_id if producer else None
        results = [
            self.ingest(item, source, producer_id=producer_id, index=index) if isinstance(item, AssetEvent) else item
            for index, item in enumerate(parsed)
        ]
        publish_cdc_lag(parsed, results, self._clock())
        return results

    def manifest_refusal(self, event: AssetEvent) -> str | None:
        """Why a pushed MANIFEST_SEALED could never be verified (its manifest is where the spool verifier may not
        read, ``domain.spool_buckets``); None when it can be, or the event is no such claim."""
        if self._readable_spool is None or event.event_type is not EventType.MANIFEST_SEALED:
            return None
        return self._readable_spool.refusal(event.manifest_uri or "")

    def ingest(
        self,
        event: AssetEvent,
        source: SourceType,
        producer_id: str | None = None,
        index: int | None = None,
        more_partitions: Chunks = (),
    ) -> EventResult:
        """Record one valid event and advance the state; the answer says which of the two happened.
        ``more_partitions``: a read snapshot's keys past its event's (``SnapshotInfo.more_partitions``)."""
        received_at = self._clock()
        recording = self._record_and_advance(event, source, received_at, producer_id, more_partitions)
        if recording is not None and recording.novel:  # recorded, advanced and settled: two writes, nothing else
            return EventResult(eventId=event.event_id, status=IngestStatus.ACCEPTED, index=index)
        if recording is None:
            recording = self._store.record_event(event, source, received_at, producer_id)
        self._record_parts(event, source, recording, more_partitions)
        if recording.settled:  # an earlier delivery did every step below: the refused put was the only request
            return EventResult(
                eventId=event.event_id, status=IngestStatus.DUPLICATE, reason=_DUPLICATE_REASON, index=index
            )
        if self._coverage is not None:
            try:
                self._coverage.record(event)
            except CoverageTooFragmentedError as exc:
                return EventResult(eventId=event.event_id, status=IngestStatus.REJECTED, reason=str(exc), index=index)
        outcome = advance_state(self._store, event, received_at, recorded_at=recording.received_at)
        told, late_verdict = self._after_advance(event, outcome, received_at)
        if outcome is not AdvanceOutcome.NO_STATE:
            self._store.mark_settled(event)  # last: a crash before it leaves the redelivery every step to redo
        status, reason = _answer(recording.novel, outcome, told, late_verdict)
        return EventResult(eventId=event.event_id, status=status, reason=reason, index=index)

    def _record_parts(self, event: AssetEvent, source: SourceType, recording: Recording, more: Chunks) -> None:
        """The event's partition parts past its keys, and for a read of the table recording a snapshot another event
        (a push) recorded first, its keys that one left out."""
        first: tuple[str, ...] | Literal[False] | None = False
        if not recording.novel and source in _READS:
            first = recording.partitions
        parts = partition_parts(event, more, first)
        if parts:
            self._store.record_partition_parts(parts, recording.received_at)

    def _after_advance(self, event: AssetEvent, outcome: AdvanceOutcome, received_at: int) -> tuple[str | None, bool]:
        """The steps the advance's outcome asks for: a late verdict's touch of the state, a sealed manifest's
        verification, a late snapshot's notice to its EACH_VERSION rules. The notice told (or None) and whether
        the verdict came late."""
        late_verdict = outcome is AdvanceOutcome.STALE and event.event_type in _VERDICTS
        if late_verdict:
            # The verdict counts for its own snapshot (EACH_VERSION judges each snapshot by its checks): wake the
            # resolver with a touch of the state, the one extra write a late verdict costs.
            apply_change(self._store, event.asset_key, verdict_touch(event), event.event_id, received_at)
        if (
            self._verifications is not None
            and event.event_type is EventType.MANIFEST_SEALED
            and outcome in (AdvanceOutcome.ADVANCED, AdvanceOutcome.ALREADY)
        ):
            # A claim counts once verified; a redelivery asks again, in case a crash lost the first request.
            self._verifications.send([verification_request(event)])
        told: str | None = None
        if outcome is AdvanceOutcome.STALE and event.event_type is EventType.SNAPSHOT_COMMITTED:
            # Decided now, before the event is settled (a redelivery after a crash decides again, idempotently):
            # whether the asset's EACH_VERSION rules already ran a newer version, noted where their claims see it.
            told = self._late(event.asset_key, snapshot_record(event), received_at) if self._late else UNKNOWN_RULES
        return told, late_verdict

    def _record_and_advance(
        self, event: AssetEvent, source: SourceType, received_at: int, producer_id: str | None, more: Chunks
    ) -> Recording | None:
        """The record and the advance at once (``AssetStore.record_and_advance``) when nothing else may come between
        them: no parts to record first, no interval to unite into coverage, no verification to ask for. None: the
        step-by-step path (a refused record's answer is that path's, without its request)."""
        if more or (event.event_type is EventType.INTERVAL_COVERED and self._coverage is not None):
            return None
        if event.event_type is EventType.MANIFEST_SEALED and self._verifications is not None:
            return None
        change = advance_for(event, received_at)  # decided here; the store applies it with the record
        if change is None:
            return None
        return self._store.record_and_advance(event, source, received_at, producer_id, change=change)


def _answer(
    novel: bool, outcome: AdvanceOutcome, told: str | None, late_verdict: bool
) -> tuple[IngestStatus, str | None]:
    """The status and reason of an event that went the step-by-step path."""
    if not novel:
        return IngestStatus.DUPLICATE, _DUPLICATE_REASON
    if outcome is not AdvanceOutcome.STALE:
        return IngestStatus.ACCEPTED, None
    reason = "recorded; the asset state already holds a newer version"
    if told:
        return IngestStatus.STALE, f"{reason}; {told}"
    if late_verdict:
        return (
            IngestStatus.STALE,
            f"{reason}; the verdict counts for its snapshot, which EACH_VERSION rules judge by its own checks",
        )
    return IngestStatus.STALE, reason


def envelope_events(body: Any, limit: int) -> list[Any]:
    """One event, or ``{"events": [...]}`` with 1..limit items; anything else is a 400."""
    if isinstance(body, dict) and "events" in body:
        try:
            envelope = PushEnvelope.model_validate(body)
        except PydanticValidationError as exc:
            raise ValidationError(describe_validation_error(exc), field="events") from exc
        if len(envelope.events) > limit:
            raise ValidationError(f"at most {limit} events per push, got {len(envelope.events)}", field="events")
        return list(envelope.events)
    if isinstance(body, dict):
        return [body]
    raise ValidationError('body must be one event object or {"events": [...]}', field="body")
