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
    "asset keys by the producer's lineageDatasets; other event types record nothing. One result per output. "
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
    """One poll of the registered Iceberg tables the event names; an unregistered one cannot be polled."""
    container = current()
    answers: dict[str, dict[str, Any]] = {}
    pollable: list[str] = []
    for item in polls:
        if item.asset_key in answers:
            continue
        asset = container.asset_registry.get_asset(item.asset_key)
        if asset is None or asset.source is None:
            answers[item.asset_key] = EventResult(
                status=IngestStatus.REJECTED,
                reason=f"{item.asset_key} is an Iceberg table: lakehook orders its snapshots by sequence number, "
                "which OpenLineage does not report, so it polls the table instead; register the asset with its "
                "source (PUT /assets) to have snapshot "
                f"{item.snapshot_id} recorded",
            ).to_api()
            continue
        pollable.append(item.asset_key)
        answers[item.asset_key] = {
            "eventId": None,
            "status": POLL_QUEUED,
            "reason": f"a poll of {item.asset_key} was queued: it records snapshot {item.snapshot_id} with its "
            "sequence number (Iceberg's order, which OpenLineage does not report)",
        }
    if pollable:
        container.work_queue.send([{"mode": WorkMode.POLL.value, "assetKeys": sorted(pollable)}])
    return answers
