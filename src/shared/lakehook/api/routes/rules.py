"""Rules: PUT/GET/DELETE /rules/{ruleId}, GET /rules, GET /rules/{ruleId}/explain ("why hasn't it run?") and
POST /rules/{ruleId}/backtest (the rule tried on the stored history)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.backtest_answers import BacktestAnswer
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok, replayable
from lakehook.api.http import json_body, json_response, raw_body
from lakehook.api.paths import IdempotencyKey, RuleId
from lakehook.api.rule_answers import Evaluation, Explanation, RuleAnswer, RulePage
from lakehook.api.scopes import check_every_asset, visible_rules
from lakehook.container import current

router = APIGatewayRouter()

Limit = Annotated[int, Query(ge=1, le=500)]
NextToken = Annotated[str | None, Query(alias="nextToken", max_length=2048)]
DryRun = Annotated[
    bool, Query(alias="dryRun", description="validate fully, write nothing, answer what would be written")
]


@router.put(
    "/rules/<ruleId>",
    summary="Create or replace a rule",
    description="Groups (OR) of members (AND), a policy and a target. A malformed rule is a 400 naming the field; "
    "so is a target URL the outbound policy refuses, or a secret the target names that does not exist. "
    "With dryRun=true nothing is written and the answer lists in wouldStart the runs the write would start now.",
    tags=["rules"],
    security=MANAGEMENT,
    responses=answers({200: ("replaced", RuleAnswer), 201: ("created", RuleAnswer)}, WITH_BODY),
)
def put_rule(ruleId: RuleId, dry_run: DryRun = False) -> Response[str]:
    if dry_run:  # checked as the write would be, and the runs its evaluation would start now
        rule, runs = current().put_rule.preview(ruleId, json_body(router.current_event))
        return json_response(RuleAnswer.dry_run_of(rule, runs).dump())
    stored, created = current().put_rule.put(ruleId, json_body(router.current_event))
    return json_response(RuleAnswer.from_domain(stored).dump(), 201 if created else 200)


@router.get("/rules", summary="List rules", tags=["rules"], security=MANAGEMENT, responses=answers(ok(RulePage)))
def list_rules(limit: Limit = 100, next_token: NextToken = None) -> Response[str]:
    page = current().read_rules.list(limit, next_token)
    items = visible_rules(page.items, lambda stored: stored.rule.rule_id)  # the caller's scope, page by page
    shown = [RuleAnswer.from_domain(s) for s in items]
    return json_response(RulePage(items=shown, next_token=page.next_token).dump())


@router.get(
    "/rules/<ruleId>",
    summary="Read a rule",
    tags=["rules"],
    security=MANAGEMENT,
    responses=answers(ok(RuleAnswer), ALWAYS, 404),
)
def get_rule(ruleId: RuleId) -> Response[str]:
    return json_response(RuleAnswer.from_domain(current().read_rules.get(ruleId)).dump())


@router.delete(
    "/rules/<ruleId>",
    summary="Delete a rule (its triggers stay)",
    tags=["rules"],
    security=MANAGEMENT,
    responses=answers(ok(None, "deleted", 204), ALWAYS, 404),
)
def delete_rule(ruleId: RuleId) -> Response[str]:
    current().delete_rule.delete(ruleId)
    return Response(status_code=204, body="")


@router.get(
    "/rules/<ruleId>/explain",
    summary="Why has the rule (not) run?",
    description="Per group and member: READY or what blocks it, with current and required values; "
    "the last trigger and the evaluation time. A scheduled group also says its cron and time zone, its last and "
    "next tick (UTC and in its zone) and what its next run waits for (schedule.waitsFor).",
    tags=["rules"],
    security=MANAGEMENT,
    responses=answers(ok(Explanation), ALWAYS, 404),
)
def explain_rule(ruleId: RuleId) -> Response[str]:
    return json_response(current().explain_rule.explain(ruleId))


@router.post(
    "/rules/<ruleId>/evaluate",
    summary="Evaluate a rule now, and claim what is ready",
    description="The resolver's own evaluation: what is ready is claimed (the same versions give the same key, "
    'so repeating it claims nothing new). With {"force": true} a manual run of the current versions under a '
    "key of its own; 409 while one for the same versions is in flight. A partitioned group's manual run is of one "
    'partition ({"force": true, "partition": "dt=2026-12-01"}): it pins the newest data commit touching it of each '
    "partitioned member (409 naming a member that has none). Answers the explanation and the keys claimed. "
    "A forced run under an Idempotency-Key is recorded with its answer: the same request repeated answers it again "
    "(Idempotent-Replayed: true) and starts nothing; another request under the key is a 409 IDEMPOTENCY_KEY_REUSED.",
    tags=["rules"],
    security=MANAGEMENT,
    responses=replayable(answers(ok(Evaluation), WITH_BODY, 404, 409), 200),
)
def evaluate_rule(ruleId: RuleId, idempotency_key: IdempotencyKey = None) -> Response[str]:
    body = json_body(router.current_event) if raw_body(router.current_event).strip() else None
    answer = current().evaluate_rule.answer_evaluate(ruleId, body, idempotency_key)
    return json_response(answer.body, answer.status, answer.headers())


@router.post(
    "/rules/<ruleId>/backtest",
    summary="Try a rule on the stored event history",
    description="Body, every field optional: rule (a rule as PUT takes it; absent: the stored rule), from and to "
    "(ISO 8601 or epoch ms; default: the oldest event kept, and now). The rule is checked as a PUT checks "
    "it, applied at from on the members' states that the kept events before it made, and the events up to to are "
    "replayed through the resolver's own gather, plan and claims on throw-away stores: the answer lists the runs it "
    "would have started, with their pins and partitions, and what it would wait for at to. Nothing is written or "
    "started. A from older than the event retention, a history of more than 1000 events, or a replay longer than "
    "20 s is a 400 that says which.",
    tags=["rules"],
    security=MANAGEMENT,
    responses=answers(ok(BacktestAnswer), WITH_BODY, 404),
)
def backtest_rule(ruleId: RuleId) -> Response[str]:
    body = json_body(router.current_event) if raw_body(router.current_event).strip() else None
    if isinstance(body, dict) and "rule" in body:
        check_every_asset(f"POST /rules/{ruleId}/backtest with a rule in the body")
    return json_response(current().backtest_rule.backtest(ruleId, body))
