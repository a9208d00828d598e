"""What the OpenAPI document says about each route besides its parameters: who may call it, what it answers.

Routes pass ``security=`` and ``responses=`` built here to their Powertools decorators, so the document
is generated from the routes themselves. Error answers share one schema (``Error``); each route lists
only the statuses it can answer, and the schemathesis test (``tests/e2e/test_api_contract.py``) holds
the running stack to exactly that.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.requests import REPLAYED_HEADER
from lakehook.domain.signing import PRODUCER_HEADER, SIGNATURE_HEADER

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.models import SecurityScheme


class Error(BaseModel):
    """Every error answer: a code, a message naming what was wrong, and the field when one is to blame."""

    model_config = ConfigDict(defer_build=True)  # describes answers in the document only, like api.answers

    error: str = Field(
        description="BAD_REQUEST, UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, CONFLICT, IDEMPOTENCY_KEY_REUSED, …"
    )
    message: str
    field: str | None = Field(default=None, description="the request field the message is about")


@cache
def security_schemes() -> dict[str, SecurityScheme]:
    """The document's security schemes, built with the document rather than at import: Powertools' OpenAPI
    models (41 pydantic classes, their schemas built when imported) serve nothing else."""
    from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn, HTTPBearer

    from lakehook.domain.completion import COMPLETION_TOKEN_HEADER

    return {
        "adminToken": HTTPBearer(description="The local stack's admin token: `Authorization: Bearer <token>`."),
        "sigv4": APIKey(
            **{"in": APIKeyIn.header},
            name="Authorization",
            description="A deployed stack: an IAM identity signing with SigV4 for the `execute-api` service. A "
            "route that also takes other credentials (push, lineage, run completion) takes SigV4 at its IAM "
            "variant, the same path under `/iam`.",
            openapi_extensions={"x-amazon-apigateway-authtype": "awsSigv4"},
        ),
        "producerId": APIKey(
            **{"in": APIKeyIn.header}, name=PRODUCER_HEADER, description="The registered producer's id."
        ),
        "producerSignature": APIKey(
            **{"in": APIKeyIn.header},
            name=SIGNATURE_HEADER,
            description='`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, valid for 5 minutes.',
        ),
        "producerApiKey": HTTPBearer(
            description="A producer's `apiKey` (`<producerId>:<secret>`), as OpenLineage's `api_key` auth sends it: "
            "`Authorization: Bearer <apiKey>`. Taken only from a producer registered with `lineageBearer: true` "
            "(a bearer key has no replay window); any producer may sign instead."
        ),
        "completionToken": APIKey(
            **{"in": APIKeyIn.header},
            name=COMPLETION_TOKEN_HEADER,
            description="The `completionToken` the trigger's invocation payload carried.",
        ),
    }


# Alternatives (OR) of requirements; the schemes inside one requirement are needed together (AND).
MANAGEMENT: list[dict[str, list[str]]] = [{"adminToken": []}, {"sigv4": []}]
PRODUCER: list[dict[str, list[str]]] = [{"producerId": [], "producerSignature": []}, *MANAGEMENT]
# The signed form always; the bearer apiKey only from a producer registered with lineageBearer: true.
LINEAGE: list[dict[str, list[str]]] = [{"producerId": [], "producerSignature": []}, {"producerApiKey": []}, *MANAGEMENT]
RUN_COMPLETION: list[dict[str, list[str]]] = [{"completionToken": []}, *MANAGEMENT]

_MEANING = {
    400: "bad input; the message names the field",
    401: "no credentials, or credentials that do not verify",
    403: "credentials that may not do this (a producer outside its prefixes; IAM refusing the caller)",
    404: "no such resource",
    409: "conflicts with the stored state",
    413: "the body is larger than the limit",
    415: "the body is not sent as application/json",
}
# Every route validates its input and its credentials; API Gateway's IAM check answers 403 before it.
ALWAYS = (400, 401, 403)
WITH_BODY = (*ALWAYS, 413, 415)


def answers(
    success: dict[int, tuple[str, Any]], errors: tuple[int, ...] = ALWAYS, *extra: int
) -> dict[int, OpenAPIResponse]:
    """``responses=`` for a route: its success answers (status → description, model) and its error statuses."""
    responses: dict[int, OpenAPIResponse] = {}
    for status, (description, model) in success.items():
        answer: OpenAPIResponse = {"description": description}
        if model is not None:
            answer["content"] = {"application/json": {"model": model}}
        responses[status] = answer
    for status in sorted({*errors, *extra}):
        responses[status] = {"description": _MEANING[status], "content": {"application/json": {"model": Error}}}
    return responses


def ok(model: Any, description: str = "OK", status: int = 200) -> dict[int, tuple[str, Any]]:
    """The one success answer of most routes."""
    return {status: (description, model)}


def replayable(responses: dict[int, OpenAPIResponse], status: int) -> dict[int, OpenAPIResponse]:
    """``responses`` with the ``Idempotent-Replayed`` header on ``status``: the answer of a route that starts a run
    may be the first answer to its Idempotency-Key, given again."""
    responses[status]["headers"] = {
        REPLAYED_HEADER: {
            "description": "true when this is the first answer to the request's Idempotency-Key, given again "
            "(nothing new was started)",
            "schema": {"type": "string", "enum": ["true"]},
        }
    }
    return responses
