"""POST /api/v1/lineage: OpenLineage RunEvents from the jobs that already emit them (see domain.lineage)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import ValidationError as PydanticValidationError

from lakehook.api.answers import LineageAnswer
from lakehook.api.auth import current_principal
from lakehook.api.contract import LINEAGE, WITH_BODY, answers, ok
from lakehook.api.http import json_body, json_response
from lakehook.api.routes.events import count_results
from lakehook.container import current
from lakehook.domain.errors import ValidationError
from lakehook.domain.events import EventResult, IngestStatus, SourceType
from lakehook.domain.lineage import RunEvent, Unmapped, snapshot_events
from lakehook.usecases.ingest import describe_validation_error

router = APIGatewayRouter()


@router.post(
    "/api/v1/lineage",
    summary="Receive an OpenLineage RunEvent",
    description="The OpenLineage HTTP transport's endpoint. A COMPLETE event's outputs become SNAPSHOT_COMMITTED "
    "events (the dataset's version facet is the snapshot id; other facets are kept in the payload), mapped to "
    "asset keys by the producer's lineageDatasets; other event types record nothing. One result per output.",
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
    raw = [e for e in found if not isinstance(e, Unmapped)]
    ingested = iter(container.ingest.ingest_raw(raw, SourceType.LINEAGE, producer) if raw else [])
    results = [
        EventResult(status=IngestStatus.REJECTED, reason=e.reason) if isinstance(e, Unmapped) else next(ingested)
        for e in found
    ]
    count_results(results)
    return json_response({"eventType": event.event_type, "results": [r.to_api() for r in results]})
