"""POST /runs/{triggerKey}/complete: a downstream run reports its end and its outlets.

Authorized from the headers and the path alone, before the body is read, by the route's authenticator
(``api.auth.run_or_admin``): management credentials, or ``X-Lakehook-Completion-Token: <hex>``, the token this
trigger's invocation carried (``completionToken``).
A producer's push signature does not complete runs. A token caller's outlets must lie within the rule's
declared ``outlets``, and so must an OPERATOR's: it operates runs, it does not push events (only an ADMIN's
completion may name any outlet).
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import CompletionAnswer
from lakehook.api.auth import PrincipalKind, current_principal
from lakehook.api.contract import RUN_COMPLETION, WITH_BODY, answers, ok
from lakehook.api.http import json_body, json_response
from lakehook.api.paths import TriggerKey
from lakehook.container import current
from lakehook.domain.access import Action
from lakehook.domain.completion import COMPLETION_TOKEN_HEADER
from lakehook.usecases.completion import Caller

router = APIGatewayRouter()


@router.post(
    "/runs/<triggerKey>/complete",
    summary="Report a run's end and its outlets",
    description='{"status": "SUCCEEDED" | "FAILED", "outlets": [event, ...]}, with management credentials or '
    f"{COMPLETION_TOKEN_HEADER} (the completionToken of the invocation). Outlets (asset events, or events with "
    '"alias" instead of "assetKey") enter the normal ingest path; with a token they must lie within the '
    "rule's declared outlets, as with an OPERATOR's credentials (403 otherwise, nothing written). "
    "The first terminal status wins: the same completion again answers 200 (repeated: true), a different one "
    "409. Answers one result per outlet.",
    tags=["runs"],
    security=RUN_COMPLETION,
    responses=answers(ok(CompletionAnswer, "the run's end is recorded; one result per outlet"), WITH_BODY, 404, 409),
)
def complete(triggerKey: TriggerKey) -> Response[str]:
    # the route's authenticator (api.auth.run_or_admin) checked the token before the body was read
    principal = current_principal()
    administers = (
        principal.kind is PrincipalKind.ADMIN and principal.grant is not None and principal.grant.may(Action.ADMINISTER)
    )
    caller = Caller.MANAGEMENT if administers else Caller.RUN  # an OPERATOR's outlets: the rule's, as the run's
    body = json_body(router.current_event)
    result = current().complete_run(triggerKey, body, caller)
    return json_response(CompletionAnswer.from_domain(result).dump())
