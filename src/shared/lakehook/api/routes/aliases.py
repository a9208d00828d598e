"""PUT/GET /aliases/{name}, GET /aliases: a name that resolves to concrete assets."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import AliasAnswer, AliasPage
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok
from lakehook.api.http import json_response
from lakehook.api.paths import AliasName
from lakehook.container import current
from lakehook.domain.aliases import AliasSpec

router = APIGatewayRouter()

Limit = Annotated[int, Query(ge=1, le=500)]
NextToken = Annotated[str | None, Query(alias="nextToken", max_length=2048)]
DryRun = Annotated[
    bool, Query(alias="dryRun", description="validate fully, write nothing, answer what would be written")
]


@router.put(
    "/aliases/<name>",
    summary="Create or replace an alias",
    description='An event sent with "alias" instead of "assetKey" is recorded for each of these assets.',
    tags=["aliases"],
    security=MANAGEMENT,
    responses=answers({200: ("replaced", AliasAnswer), 201: ("created", AliasAnswer)}, WITH_BODY),
)
def put_alias(name: AliasName, spec: AliasSpec, dry_run: DryRun = False) -> Response[str]:
    if dry_run:
        return json_response(
            {**AliasAnswer.from_domain(current().manage_aliases.check(name, spec)).dump(), "dryRun": True}
        )
    alias, created = current().manage_aliases.put(name, spec)
    return json_response(AliasAnswer.from_domain(alias).dump(), 201 if created else 200)


@router.get(
    "/aliases",
    summary="List aliases",
    description="In name order.",
    tags=["aliases"],
    security=MANAGEMENT,
    responses=answers(ok(AliasPage)),
)
def list_aliases(limit: Limit = 100, next_token: NextToken = None) -> Response[str]:
    page = current().manage_aliases.list(limit, next_token)
    items = [AliasAnswer.from_domain(a) for a in page.items]
    return json_response(AliasPage(items=items, next_token=page.next_token).dump())


@router.get(
    "/aliases/<name>",
    summary="Read an alias",
    tags=["aliases"],
    security=MANAGEMENT,
    responses=answers(ok(AliasAnswer), ALWAYS, 404),
)
def get_alias(name: AliasName) -> Response[str]:
    return json_response(AliasAnswer.from_domain(current().manage_aliases.get(name)).dump())
