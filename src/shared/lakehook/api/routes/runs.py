"""POST /runs/{triggerKey}/complete: a downstream run reports its end and its outlets.

Signed like a push (``X-Lakehook-Producer`` + ``X-Lakehook-Signature``; outlets must lie under the
producer's prefixes) or sent with management credentials.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.http import is_admin, json_body, json_response, raw_body
from lakehook.container import current
from lakehook.domain.producers import Producer
from lakehook.domain.signing import PRODUCER_HEADER, SIGNATURE_HEADER
from lakehook.wiring_dispatch import complete_run

router = APIGatewayRouter()


def _authenticate(body: bytes) -> Producer | None:
    event = router.current_event
    producer_id = event.get_header_value(PRODUCER_HEADER, case_sensitive=False)
    signature = event.get_header_value(SIGNATURE_HEADER, case_sensitive=False)
    if producer_id is None and signature is None and is_admin(event):
        return None  # management credentials may complete any run and write any asset
    return current().push_authenticator.authenticate(producer_id, signature, body)


@router.post(
    "/runs/<triggerKey>/complete",
    summary="Report a run's end and its outlets",
    description='{"status": "SUCCEEDED" | "FAILED", "outlets": [event, ...]}: outlets (asset events, or events '
    'with "alias" instead of "assetKey") enter the normal ingest path. Answers one result per outlet.',
    tags=["runs"],
)
def complete(triggerKey: str) -> Response[str]:
    event = router.current_event
    body = json_body(event)  # 413 and 400 before any signature work
    producer = _authenticate(raw_body(event))
    result = complete_run(current())(triggerKey, body, producer)
    return json_response(result.to_api())
