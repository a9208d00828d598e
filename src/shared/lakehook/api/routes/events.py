"""POST /asset-events: writer jobs push evidence, signed by HMAC (or with management credentials)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import PushAnswer
from lakehook.api.auth import current_principal
from lakehook.api.contract import PRODUCER, WITH_BODY, answers, ok
from lakehook.api.http import json_body, json_response
from lakehook.container import current

router = APIGatewayRouter()


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
    producer = current_principal().producer  # the resolver verified the signature (or admin) first
    results = current().push_events(json_body(router.current_event), producer)
    return json_response(PushAnswer.from_domain(results).dump())
