"""POST /api/v1/lineage: OpenLineage RunEvents from the jobs that already emit them (see domain.lineage)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import ValidationError as PydanticValidationError

from lakehook.api.answers import LineageAnswer
from lakehook.api.auth import current_principal
from lakehook.api.contract import LINEAGE, WITH_BODY, answers, ok
from lakehook.api.http import json_body, json_response
from lakehook.container import current
from lakehook.domain.errors import ValidationError
from lakehook.domain.lineage import RunEvent
from lakehook.usecases.ingest import describe_validation_error

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
    producer = current_principal().producer  # None for management credentials: the default mapping only
    try:
        event = RunEvent.model_validate(json_body(router.current_event))
    except PydanticValidationError as exc:
        raise ValidationError(describe_validation_error(exc), field="body") from exc
    results = current().receive_lineage(event, producer)
    return json_response(LineageAnswer.from_domain(event.event_type, results).dump())
