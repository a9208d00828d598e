"""Assets: registration, state and recorded events. Keys travel in bodies and query strings."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import AssetAnswer, AssetPage, AssetStateAnswer, EventPage
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok
from lakehook.api.http import json_response
from lakehook.api.scopes import visible_assets
from lakehook.container import current
from lakehook.domain.assets import AssetRegistration, validate_asset_key
from lakehook.domain.errors import ValidationError
from lakehook.domain.time import ms_to_iso

router = APIGatewayRouter()

Limit = Annotated[int, Query(ge=1, le=500)]
AssetKeyQuery = Annotated[str, Query(alias="assetKey", min_length=1, max_length=512)]
NextToken = Annotated[str | None, Query(alias="nextToken", max_length=2048)]
DryRun = Annotated[
    bool, Query(alias="dryRun", description="validate fully, write nothing, answer what would be written")
]


def _asset_key(value: str) -> str:
    try:
        return validate_asset_key(value)
    except ValueError as exc:
        raise ValidationError(str(exc), field="assetKey") from exc


@router.put(
    "/assets",
    summary="Register an asset (create or replace)",
    tags=["assets"],
    security=MANAGEMENT,
    responses=answers({200: ("replaced", AssetAnswer), 201: ("created", AssetAnswer)}, WITH_BODY),
)
def put_asset(asset: AssetRegistration, dry_run: DryRun = False) -> Response[str]:
    created = current().register_asset(asset, dry_run=dry_run)
    if dry_run:
        return json_response({**asset.to_api(), "dryRun": True})
    return json_response(asset.to_api(), 201 if created else 200)


@router.get(
    "/assets",
    summary="List registered assets",
    tags=["assets"],
    security=MANAGEMENT,
    responses=answers(ok(AssetPage)),
)
def list_assets(limit: Limit = 100, next_token: NextToken = None) -> Response[str]:
    page = current().list_assets(limit, next_token)
    return json_response({**page, "items": visible_assets(page["items"], lambda item: item["assetKey"])})


@router.get(
    "/assets/state",
    summary="The asset's advance-only state",
    tags=["assets"],
    security=MANAGEMENT,
    responses=answers(ok(AssetStateAnswer), ALWAYS, 404),
)
def get_state(asset_key: AssetKeyQuery) -> Response[str]:
    return json_response(current().read_asset_state(_asset_key(asset_key)))


@router.get(
    "/assets/events",
    summary="The asset's recorded events, newest first",
    tags=["assets"],
    security=MANAGEMENT,
    responses=answers(ok(EventPage)),
)
def list_events(asset_key: AssetKeyQuery, limit: Limit = 50, next_token: NextToken = None) -> Response[str]:
    key = _asset_key(asset_key)
    page = current().asset_store.list_events(key, limit, next_token)
    items = [
        {
            **r.event.to_api(),
            "eventId": r.event.event_id,
            "source": r.source.value,
            "receivedAt": ms_to_iso(r.received_at),
            **({"producerId": r.producer_id} if r.producer_id else {}),
        }
        for r in page.items
    ]
    return json_response({"items": items, "nextToken": page.next_token})
