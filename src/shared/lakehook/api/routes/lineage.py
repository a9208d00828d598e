"""POST /api/v1/lineage: OpenLineage RunEvents from the jobs that already emit them (see domain.lineage)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import ValidationError as PydanticValidationError

from lakehook.api.answers import LineageAnswer
from lakehook.api.auth import current_principal
from lakehook.api.contract import LINEAGE, WITH_BODY, answers, ok
from lakehook.api.http import json_body, json_response
from lakehook.container import current
from lakehook.domain.errors import AuthorizationError, ValidationError
from lakehook.domain.events import EventResult, IngestStatus, SourceType
from lakehook.domain.lineage import NeedsPoll, RunEvent, Unmapped, snapshot_events
from lakehook.event_metrics import count_results
from lakehook.usecases.ingest import describe_validation_error
from lakehook.usecases.plan_polls import WorkMode

POLL_QUEUED = "POLL_QUEUED"

router = APIGatewayRouter()


@router.post(
    "/api/v1/lineage",
    summary="Receive an OpenLineage RunEvent",
    description="The OpenLineage HTTP transport's endpoint. A COMPLETE event's outputs become SNAPSHOT_COMMITTED "
    "events (the dataset's version facet is the snapshot id; other facets are kept in the payload), mapped to "
    "asset keys by the producer's lineageDatasets (the dataset's name, then its symlinks); an Iceberg output or "
    "one without a version queues a poll of its registered table (POLL_QUEUED); other event types record "
    "nothing. One result per output; more facets or symlinks on a dataset than the limits allow is a 400. "
    "A producer signs the request as it signs POST /asset-events; the bearer apiKey (OpenLineage's api_key "
    "auth) is taken only from a producer registered with lineageBearer: true.",
    tags=["events"],
    security=LINEAGE,
    responses=answers(ok(LineageAnswer, "one result per output dataset"), WITH_BODY),
)
def receive_lineage() -> Response[str]:
    container = current()
    producer = current_principal().producer  # None for management credentials: the default mapping only
    try:
        event = RunEvent.model_validate(json_body(router.current_event))
    except PydanticValidationError as exc:
        raise ValidationError(describe_validation_error(exc), field="body") from exc
    found = snapshot_events(event, producer.lineage_datasets if producer else [])
    polls = [e for e in found if isinstance(e, NeedsPoll)]
    outside = sorted({p.asset_key for p in polls if producer is not None and not producer.may_write(p.asset_key)})
    if outside:  # checked before anything is recorded, as ingest checks the raw events
        raise AuthorizationError(
            f"producer {producer.producer_id if producer else ''!r} may not write {', '.join(outside)}: "
            f"outside its prefixes {producer.asset_key_prefixes if producer else []}"
        )
    raw = [e for e in found if isinstance(e, dict)]
    ingested = iter(container.ingest.ingest_raw(raw, SourceType.LINEAGE, producer) if raw else [])
    polled = _queue_polls(polls)
    results: list[dict[str, Any]] = []
    recorded: list[EventResult] = []
    for item in found:
        if isinstance(item, Unmapped):
            results.append(EventResult(status=IngestStatus.REJECTED, reason=item.reason).to_api())
        elif isinstance(item, NeedsPoll):
            results.append(polled[item.asset_key])
        else:
            result = next(ingested)
            recorded.append(result)
            results.append(result.to_api())
    count_results(recorded)
    return json_response({"eventType": event.event_type, "results": results})


def _queue_polls(polls: list[NeedsPoll]) -> dict[str, dict[str, Any]]:
    """One poll of the registered tables the event names (Iceberg outputs, and outputs that report no
    version); an asset that is not registered with a poll source cannot be polled and is REJECTED."""
    container = current()
    answers: dict[str, dict[str, Any]] = {}
    pollable: list[str] = []
    for item in polls:
        if item.asset_key in answers:
            continue
        asset = container.asset_registry.get_asset(item.asset_key)
        if asset is None or asset.source is None:
            state = "not registered" if asset is None else "registered without a source"
            answers[item.asset_key] = EventResult(
                status=IngestStatus.REJECTED,
                reason=f"{item.why()}, so lakehook would poll the table, but {item.asset_key} is {state}: "
                "register the asset with its source (PUT /assets) to have the commit recorded by a poll",
            ).to_api()
            continue
        pollable.append(item.asset_key)
        answers[item.asset_key] = {
            "eventId": None,
            "status": POLL_QUEUED,
            "reason": f"{item.why()}: a poll of {item.asset_key} was queued; it records the table's new "
            "snapshots with their own order, schema and commit time",
        }
    if pollable:
        container.work_queue.send([{"mode": WorkMode.POLL.value, "assetKeys": sorted(pollable)}])
    return answers
