"""The sensor (RFC §4, Strategy A): POST /sensors/evaluate, a run in progress asking whether its inputs are ready."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.contract import MANAGEMENT, WITH_BODY, answers, ok
from lakehook.api.http import json_response
from lakehook.api.scopes import check_every_asset, check_rule
from lakehook.api.sensor_answers import SensorAnswer
from lakehook.container import current
from lakehook.domain.sensors import MAX_WAIT_SECONDS, SensorRequest

router = APIGatewayRouter()


@router.post(
    "/sensors/evaluate",
    summary="Does an asset condition hold now? (a sensor; long-polls with waitSeconds)",
    description="A stored rule's groups (ruleId, optionally groupId) or an ad-hoc group (group, shaped like a rule's "
    "group), evaluated as explain evaluates them: ready when a group's members all hold now, with the versions that "
    "satisfy it. It asks about the condition, not about a rule's runs: no cursor or policy applies, nothing is "
    f"claimed or started. With waitSeconds (at most {MAX_WAIT_SECONDS}) it evaluates again every 2 s until ready or "
    "the wait is over; clients loop for longer waits. A missing rule or group is a 404; an unknown field, a "
    "partitioned or a scheduled group a 400.",
    tags=["sensors"],
    security=MANAGEMENT,
    responses=answers(ok(SensorAnswer), WITH_BODY, 404),
)
def evaluate_sensor(body: SensorRequest) -> Response[str]:
    if body.rule_id is not None:
        check_rule(body.rule_id, "POST /sensors/evaluate")
    if body.group is not None:
        check_every_asset("POST /sensors/evaluate with an ad-hoc group")
    return json_response(current().evaluate_sensor.evaluate(body))
