"""POST /runs/{triggerKey}/complete: a downstream run reports its end and its outlets.

Authorized from the headers and the path alone, before the body is read: management credentials, or
``X-Lakehook-Completion-Token: <hex>``, the token this trigger's invocation carried (``completionToken``).
A producer's push signature does not complete runs. A token caller's outlets must lie within the rule's
declared ``outlets``.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import CompletionAnswer
from lakehook.api.contract import RUN_COMPLETION, WITH_BODY, answers, ok
from lakehook.api.http import is_admin, json_body, json_response
from lakehook.api.paths import TriggerKey
from lakehook.container import current
from lakehook.domain.completion import COMPLETION_TOKEN_HEADER
from lakehook.domain.errors import AuthenticationError
from lakehook.usecases.completion import Caller

router = APIGatewayRouter()

UNAUTHENTICATED = (
    f"run completion needs management credentials or the {COMPLETION_TOKEN_HEADER} header with the "
    "completionToken this trigger's invocation carried"
)


def authorize_completion(trigger_key: str) -> Caller:
    """Who is completing this trigger, from headers only; one 401 text for a missing and a wrong token."""
    event = router.current_event
    if is_admin(event):
        return Caller.MANAGEMENT  # management credentials may complete any run and write any asset
    token = event.get_header_value(COMPLETION_TOKEN_HEADER, case_sensitive=False)
    if token and current().completion_tokens.verify(trigger_key, token):
        return Caller.RUN
    raise AuthenticationError(UNAUTHENTICATED)


@router.post(
    "/runs/<triggerKey>/complete",
    summary="Report a run's end and its outlets",
    description='{"status": "SUCCEEDED" | "FAILED", "outlets": [event, ...]}, with management credentials or '
    f"{COMPLETION_TOKEN_HEADER} (the completionToken of the invocation). Outlets (asset events, or events with "
    '"alias" instead of "assetKey") enter the normal ingest path; with a token they must lie within the '
    "rule's declared outlets (403 otherwise, nothing written). The first terminal status wins: the same "
    "completion again answers 200 (repeated: true), a different one 409. Answers one result per outlet.",
    tags=["runs"],
    security=RUN_COMPLETION,
    responses=answers(ok(CompletionAnswer, "the run's end is recorded; one result per outlet"), WITH_BODY, 404, 409),
)
def complete(triggerKey: TriggerKey) -> Response[str]:
    caller = authorize_completion(triggerKey)  # before the body is read: an unauthenticated body is never parsed
    body = json_body(router.current_event)
    result = current().complete_run(triggerKey, body, caller)
    return json_response(result.to_api())
