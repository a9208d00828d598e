"""PUT/GET /producers/{producerId}, GET /producers: who may push, under which asset key prefixes."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import ProducerAnswer, ProducerPage
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok
from lakehook.api.http import json_response
from lakehook.api.paths import ProducerId
from lakehook.container import current
from lakehook.domain.errors import NotFoundError
from lakehook.domain.producers import ProducerSpec, api_key, validate_producer_id

router = APIGatewayRouter()

Limit = Annotated[int, Query(ge=1, le=500)]
NextToken = Annotated[str | None, Query(alias="nextToken", max_length=2048)]
DryRun = Annotated[
    bool, Query(alias="dryRun", description="validate fully, write nothing, answer what would be written")
]


@router.put(
    "/producers/<producerId>",
    summary="Create or update a producer",
    description="Answers the generated signing secret once: on creation, or with ?rotateSecret=true; with it "
    "the apiKey an OpenLineage HTTP transport sends (Authorization: Bearer) to POST /api/v1/lineage, taken only "
    "with lineageBearer: true. The secret is stored in the producer secrets' own namespace, which no target or "
    "asset source may name. 409 when one of its eventSources belongs to another producer, or when a secret of "
    "its name exists that lakehook did not create for it (nothing is written).",
    tags=["producers"],
    security=MANAGEMENT,
    responses=answers(
        {200: ("updated", ProducerAnswer), 201: ("created, with its secret", ProducerAnswer)}, WITH_BODY, 409
    ),
)
def put_producer(
    producerId: ProducerId,
    spec: ProducerSpec,
    rotate_secret: Annotated[bool, Query(alias="rotateSecret")] = False,
    dry_run: DryRun = False,
) -> Response[str]:
    registration = current().register_producer(producerId, spec, rotate_secret, dry_run=dry_run)
    if dry_run:  # never a secret: none was generated
        return json_response({**ProducerAnswer.from_domain(registration.producer).dump(), "dryRun": True})
    secret = registration.secret
    key = None if secret is None else api_key(producerId, secret)
    answer = ProducerAnswer.from_domain(registration.producer, secret, key)
    return json_response(answer.dump(), 201 if registration.created else 200)


@router.get(
    "/producers",
    summary="List producers (never their secrets)",
    description="In id order.",
    tags=["producers"],
    security=MANAGEMENT,
    responses=answers(ok(ProducerPage)),
)
def list_producers(limit: Limit = 100, next_token: NextToken = None) -> Response[str]:
    page = current().producer_registry.list_producers(limit, next_token)
    items = [ProducerAnswer.from_domain(p) for p in page.items]
    return json_response(ProducerPage(items=items, next_token=page.next_token).dump())


@router.get(
    "/producers/<producerId>",
    summary="Read a producer (never its secret)",
    tags=["producers"],
    security=MANAGEMENT,
    responses=answers(ok(ProducerAnswer), ALWAYS, 404),
)
def get_producer(producerId: ProducerId) -> Response[str]:
    producer = current().producer_registry.get_producer(validate_producer_id(producerId))
    if producer is None:
        raise NotFoundError(f"producer {producerId!r} does not exist")
    return json_response(ProducerAnswer.from_domain(producer).dump())
