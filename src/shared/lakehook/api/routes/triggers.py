"""Triggers: GET /triggers?ruleId=&status= (newest first), GET /triggers/{triggerKey},
POST /triggers/{triggerKey}/replay (``?dryRun=true`` answers the pre-flight checklist only; an
``Idempotency-Key`` makes it happen once), and POST /triggers/{triggerKey}/retry (a FAILED trigger
dispatched again under the same key)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.answers.triggers import PreflightAnswer, ReplayAnswer, TriggerAnswer, TriggerPage
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok, replayable
from lakehook.api.http import json_body, json_response, raw_body
from lakehook.api.paths import IdempotencyKey, TriggerKey
from lakehook.container import current

router = APIGatewayRouter()

Limit = Annotated[int, Query(ge=1, le=500)]
NextToken = Annotated[str | None, Query(alias="nextToken", max_length=2048)]
RuleIdQuery = Annotated[str, Query(alias="ruleId", min_length=1, max_length=64)]
StatusQuery = Annotated[str | None, Query(description="TRIGGERING, SUCCEEDED, FAILED or SKIPPED")]
DryRunQuery = Annotated[bool, Query(alias="dryRun", description="answer the pre-flight checklist, claim nothing")]


@router.get(
    "/triggers",
    summary="A rule's triggers, newest first",
    tags=["triggers"],
    security=MANAGEMENT,
    responses=answers(ok(TriggerPage)),
)
def list_triggers(
    rule_id: RuleIdQuery, status: StatusQuery = None, limit: Limit = 50, next_token: NextToken = None
) -> Response[str]:
    page = current().read_triggers.list_triggers(rule_id, status, limit, next_token)
    items = [TriggerAnswer.from_domain(t) for t in page.items]
    return json_response(TriggerPage(items=items, next_token=page.next_token).dump())


@router.get(
    "/triggers/<triggerKey>",
    summary="One trigger: pinned inputs, status, attempts, reason",
    tags=["triggers"],
    security=MANAGEMENT,
    responses=answers(ok(TriggerAnswer), ALWAYS, 404),
)
def get_trigger(triggerKey: TriggerKey) -> Response[str]:
    return json_response(TriggerAnswer.from_domain(current().read_triggers.get_trigger(triggerKey)).dump())


@router.post(
    "/triggers/<triggerKey>/retry",
    summary="Dispatch a FAILED trigger again under the same key (after its cause is fixed)",
    description=(
        "A FAILED trigger (failure RETRYABLE or FINAL) goes back to TRIGGERING under the same key, with a fresh "
        "attempt budget; the dispatcher starts it through the target's idempotency primitive, so a run an "
        "earlier attempt started is found, never started twice. 202 with the trigger; 404 for an unknown key; "
        "409 when it is TRIGGERING, SUCCEEDED or SKIPPED (replay re-runs a trigger that succeeded)."
    ),
    tags=["triggers"],
    security=MANAGEMENT,
    responses=answers(ok(TriggerAnswer, "the trigger, TRIGGERING again under its key", 202), ALWAYS, 404, 409),
)
def retry(triggerKey: TriggerKey) -> Response[str]:
    return json_response(TriggerAnswer.from_domain(current().retry_trigger(triggerKey)).dump(), 202)


@router.post(
    "/triggers/<triggerKey>/replay",
    summary="Replay a trigger: pre-flight its pinned inputs, then claim a run that reads exactly the same",
    description=(
        "201 with the checklist and the new claim (200 and no claim for a dry run); 409 REPLAY_REFUSED with the "
        "checklist when an item failed. Each request without an Idempotency-Key claims another replay; with one, "
        "the claim and its answer are recorded together: the same request repeated answers that 201 again, "
        "with the header Idempotent-Replayed: true, and claims nothing (409 IDEMPOTENCY_KEY_REUSED for "
        "another trigger, or other choices, under the key). The body is optional: "
        '{"startFrom": "<task or step>", "variables": {"name": <JSON scalar>, ...}} chooses where the rerun starts '
        "and the variables it overrides; each target receives them its own way (docs/targets.md). An unknown field, "
        "or a choice out of bounds or that the rule's target cannot honour, is a 400 naming it; nothing is claimed."
    ),
    tags=["triggers"],
    security=MANAGEMENT,
    responses=replayable(
        answers(
            {200: ("the dry run's checklist", ReplayAnswer), 201: ("the replay is claimed", ReplayAnswer)},
            WITH_BODY,
            404,
            409,
        ),
        201,
    ),
)
def replay(
    triggerKey: TriggerKey, dry_run: DryRunQuery = False, idempotency_key: IdempotencyKey = None
) -> Response[str]:
    from lakehook.domain.replay_choices import parse_replay_choices
    from lakehook.usecases.replay import ReplayRefusedError  # with the use case: the replay path only

    body = json_body(router.current_event) if raw_body(router.current_event).strip() else None
    choices = parse_replay_choices(body)
    use_case = current().replay_trigger
    try:
        answer = use_case.answer(triggerKey, dry_run=dry_run, idempotency_key=idempotency_key, choices=choices)
    except ReplayRefusedError as exc:
        body = {
            "error": "REPLAY_REFUSED",
            "message": str(exc),
            "triggerKey": triggerKey,
            "preflight": PreflightAnswer.from_domain(exc.report).dump(),
        }
        return json_response(body, 409)
    return json_response(answer.body, answer.status, answer.headers())
