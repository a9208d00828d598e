"""POST /asset-events: writer jobs push evidence, signed by HMAC (or with management credentials)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import ValidationError as PydanticValidationError

from lakehook.api.answers import PushAnswer
from lakehook.api.auth import current_principal
from lakehook.api.contract import PRODUCER, WITH_BODY, answers, ok
from lakehook.api.http import json_body, json_response
from lakehook.container import current
from lakehook.domain.errors import ValidationError
from lakehook.domain.events import EventResult, IngestStatus, PushEnvelope, SourceType
from lakehook.observability import MetricName, logger, metrics
from lakehook.usecases.aliases import ingest_through_aliases
from lakehook.usecases.ingest import describe_validation_error
from lakehook.wiring_dispatch import alias_store

router = APIGatewayRouter()


def envelope_events(body: Any, limit: int) -> list[Any]:
    """One event, or ``{"events": [...]}`` with 1..limit items; anything else is a 400."""
    if isinstance(body, dict) and "events" in body:
        try:
            envelope = PushEnvelope.model_validate(body)
        except PydanticValidationError as exc:
            raise ValidationError(describe_validation_error(exc), field="events") from exc
        if len(envelope.events) > limit:
            raise ValidationError(f"at most {limit} events per push, got {len(envelope.events)}", field="events")
        return envelope.events
    if isinstance(body, dict):
        return [body]
    raise ValidationError('body must be one event object or {"events": [...]}', field="body")


@router.post(
    "/asset-events",
    summary="Push asset events",
    description='One event or {"events": [...]} (at most 100). Each answer is ACCEPTED, DUPLICATE, STALE '
    "or REJECTED with a reason; accepted events are durable before the answer.",
    tags=["events"],
    security=PRODUCER,
    responses=answers(ok(PushAnswer, "one result per event"), WITH_BODY),
)
def push_events() -> Response[str]:
    container = current()
    producer = current_principal().producer  # the resolver verified the signature (or admin) first
    body = json_body(router.current_event)
    raw_events = envelope_events(body, container.settings.max_events_per_push)
    results = ingest_through_aliases(raw_events, container.ingest, alias_store(container), SourceType.PUSH, producer)
    count_results(results)
    return json_response({"results": [r.to_api() for r in results]})


def count_results(results: list[EventResult]) -> None:
    metric_for = {
        IngestStatus.ACCEPTED: MetricName.STATE_UPDATED,
        IngestStatus.DUPLICATE: MetricName.EVENT_DEDUPLICATED,
        IngestStatus.STALE: MetricName.EVENT_STALE,
        IngestStatus.REJECTED: MetricName.EVENT_INVALID,
    }
    metrics.add_metric(name=MetricName.EVENT_RECEIVED, unit="Count", value=len(results))
    for result in results:
        metrics.add_metric(name=metric_for[result.status], unit="Count", value=1)
        logger.info(
            "event ingested",
            extra={"event_id": result.event_id, "status": result.status.value, "reason": result.reason},
        )
