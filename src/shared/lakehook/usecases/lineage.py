"""Receive an OpenLineage RunEvent (``POST /api/v1/lineage``): its outputs become snapshot events, or polls.

The mapping from datasets to events is the domain's (``domain.lineage.snapshot_events``); this use case checks
the producer may write every asset a poll would record, ingests the events, queues the polls, and answers one
result per output, in order.
"""

from __future__ import annotations

from collections.abc import Callable

from lakehook.domain.errors import AuthorizationError
from lakehook.domain.events import EventResult, IngestStatus, SourceType
from lakehook.domain.lineage import NeedsPoll, QueuedPoll, RunEvent, Unmapped, snapshot_events
from lakehook.domain.producers import Producer
from lakehook.event_metrics import count_results
from lakehook.ports import AssetRegistry
from lakehook.ports.queue import WorkQueue
from lakehook.usecases.ingest import IngestEvents
from lakehook.usecases.plan_polls import WorkMode


class ReceiveLineage:
    """One RunEvent, from ``producer`` (None for management credentials: the default mapping only)."""

    def __init__(self, ingest: IngestEvents, registry: AssetRegistry, work_queue: Callable[[], WorkQueue]) -> None:
        """``work_queue`` is built on the first poll queued: a stack without a poll queue still takes lineage."""
        self._ingest = ingest
        self._registry = registry
        self._work_queue = work_queue

    def __call__(self, event: RunEvent, producer: Producer | None) -> list[EventResult | QueuedPoll]:
        """One result per output dataset, in order: as ``POST /asset-events`` answers, or POLL_QUEUED."""
        found = snapshot_events(event, producer.lineage_datasets if producer else [])
        polls = [e for e in found if isinstance(e, NeedsPoll)]
        _check_may_poll(producer, polls)  # before anything is recorded, as ingest checks the raw events
        raw = [e for e in found if isinstance(e, dict)]
        ingested = iter(self._ingest.ingest_raw(raw, SourceType.LINEAGE, producer) if raw else [])
        polled = self._queue_polls(polls)
        results: list[EventResult | QueuedPoll] = []
        recorded: list[EventResult] = []
        for item in found:
            if isinstance(item, Unmapped):
                results.append(EventResult(status=IngestStatus.REJECTED, reason=item.reason))
            elif isinstance(item, NeedsPoll):
                results.append(polled[item.asset_key])
            else:
                result = next(ingested)
                recorded.append(result)
                results.append(result)
        count_results(recorded)
        return results

    def _queue_polls(self, polls: list[NeedsPoll]) -> dict[str, EventResult | QueuedPoll]:
        """One poll of the registered tables the event names (Iceberg outputs, and outputs that report no
        version); an asset that is not registered with a poll source cannot be polled and is REJECTED."""
        answers: dict[str, EventResult | QueuedPoll] = {}
        pollable: list[str] = []
        for item in polls:
            if item.asset_key in answers:
                continue
            asset = self._registry.get_asset(item.asset_key)
            if asset is None or asset.source is None:
                state = "not registered" if asset is None else "registered without a source"
                answers[item.asset_key] = EventResult(
                    status=IngestStatus.REJECTED,
                    reason=f"{item.why()}, so lakehook would poll the table, but {item.asset_key} is {state}: "
                    "register the asset with its source (PUT /assets) to have the commit recorded by a poll",
                )
                continue
            pollable.append(item.asset_key)
            answers[item.asset_key] = QueuedPoll(
                asset_key=item.asset_key,
                reason=f"{item.why()}: a poll of {item.asset_key} was queued; it records the table's new "
                "snapshots with their own order, schema and commit time",
            )
        if pollable:
            self._work_queue().send([{"mode": WorkMode.POLL.value, "assetKeys": sorted(pollable)}])
        return answers


def _check_may_poll(producer: Producer | None, polls: list[NeedsPoll]) -> None:
    """AuthorizationError when the producer may not write a table the event would have polled."""
    outside = sorted({p.asset_key for p in polls if producer is not None and not producer.may_write(p.asset_key)})
    if outside:
        raise AuthorizationError(
            f"producer {producer.producer_id if producer else ''!r} may not write {', '.join(outside)}: "
            f"outside its prefixes {producer.asset_key_prefixes if producer else []}"
        )
