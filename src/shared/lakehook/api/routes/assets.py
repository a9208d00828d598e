"""Assets: registration, state and recorded events. Keys travel in bodies and query strings."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.answers.assets import AssetAnswer, AssetPage, AssetStateAnswer
from lakehook.api.answers import EventPage
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok
from lakehook.api.http import json_response
from lakehook.api.query import refuse_unknown_query
from lakehook.api.scopes import visible_assets
from lakehook.container import current
from lakehook.domain.assets import AssetRegistration, validate_asset_key
from lakehook.domain.errors import ValidationError
from lakehook.domain.event_range import EventRange
from lakehook.domain.events import event_json
from lakehook.domain.limits import MAX_LONG
from lakehook.domain.time import ms_to_iso, parse_instant_ms

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
        return json_response({**AssetAnswer.from_domain(asset).dump(), "dryRun": True})
    return json_response(AssetAnswer.from_domain(asset).dump(), 201 if created else 200)


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


Instant = Annotated[
    str | None, Query(min_length=1, max_length=64, description="ISO 8601 in UTC, or epoch milliseconds")
]
_ORDER = "a snapshot's order: its id, or an Iceberg table's sequence number (both ends included)"
FromVersion = Annotated[int | None, Query(alias="fromVersion", ge=0, le=MAX_LONG, description=_ORDER)]
ToVersion = Annotated[int | None, Query(alias="toVersion", ge=0, le=MAX_LONG, description=_ORDER)]
EVENTS_QUERY = frozenset({"assetKey", "limit", "nextToken", "start", "end", "fromVersion", "toVersion"})


def _received(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        return parse_instant_ms(value)
    except ValueError as exc:
        raise ValidationError(f"{name}: {exc}", field=name) from exc


@router.get(
    "/assets/events",
    summary="The asset's recorded events, newest first: all, those received in [start, end), or those of the "
    "snapshots ordered from fromVersion to toVersion",
    description="`start` and `end` list the events received in `[start, end)` (either may be left open), newest "
    "received first. `fromVersion` and `toVersion` list the events naming a snapshot whose order, the asset's order "
    "of versions (the snapshot id; an Iceberg table's sequence number, its commit time for a format-v1 table), is "
    "within `[fromVersion, toVersion]`, the highest first: snapshot commits and quality checks, not watermarks or "
    "tags. One kind of range a request (both is a 400 naming `fromVersion`). Each page is one DynamoDB `Query` of "
    "the range's keys (by received time on GSI1, by order on GSI2), never a filter over every event; `nextToken` "
    "pages only the listing (asset and range) that issued it. Events 0.1.0 recorded carry no order key: a "
    "version range leaves them out until they expire (the event retention). Any other query parameter is a 400 "
    "naming it.",
    tags=["assets"],
    security=MANAGEMENT,
    responses=answers(ok(EventPage)),
)
def list_events(
    asset_key: AssetKeyQuery,
    limit: Limit = 50,
    next_token: NextToken = None,
    start: Instant = None,
    end: Instant = None,
    from_version: FromVersion = None,
    to_version: ToVersion = None,
) -> Response[str]:
    refuse_unknown_query(router.current_event, EVENTS_QUERY)
    key = _asset_key(asset_key)
    within = EventRange(_received(start, "start"), _received(end, "end"), from_version, to_version)
    page = current().asset_store.list_events(key, limit, next_token, within)
    items = [
        {
            **event_json(r.event),
            "eventId": r.event.event_id,
            "source": r.source.value,
            "receivedAt": ms_to_iso(r.received_at),
            **({"producerId": r.producer_id} if r.producer_id else {}),
        }
        for r in page.items
    ]
    return json_response({"items": items, "nextToken": page.next_token})
