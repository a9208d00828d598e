"""Assets: registration, state and recorded events. Keys travel in bodies and query strings."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import AssetAnswer, AssetPage, AssetStateAnswer, EventPage
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok
from lakehook.api.http import json_response
from lakehook.container import current
from lakehook.domain.assets import SECRET_REFERENCE_PREFIXES, SECRETS_MANAGER, AssetRegistration, validate_asset_key
from lakehook.domain.errors import AuthorizationError, NotFoundError, ValidationError
from lakehook.domain.secret_names import SecretNameError
from lakehook.domain.source_endpoints import check_source_properties
from lakehook.domain.time import ms_to_iso, now_ms

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
    _refuse_producer_secrets(asset)
    container = current()
    _check_source_secrets(asset)
    if asset.source is not None:  # the endpoints it names, under the stack's outbound URL policy (as targets)
        check_source_properties(asset.source.properties, container.settings.url_policy, SECRET_REFERENCE_PREFIXES)
    if dry_run:  # the registration is fully checked by its model, the stack's settings and the URL policy
        return json_response({**asset.to_api(), "dryRun": True})
    created = container.asset_registry.put_asset(asset, now_ms())
    return json_response(asset.to_api(), 201 if created else 200)


def _refuse_producer_secrets(asset: AssetRegistration) -> None:
    """A source may not name a producer's signing secret (however spelled, and as the stack's naming rule
    resolves a ``secretsmanager:`` reference): the poller would hand it to the catalog or storage endpoint
    the source names. A reference that names no valid secret is refused here too, not at poll time."""
    if asset.source is None:
        return
    settings = current().settings
    namespace, names = settings.producer_secrets, settings.secret_names
    for name, ref in asset.source.referenced_secrets().items():
        reached = [ref]
        value = asset.source.properties[name]
        if value.startswith(SECRETS_MANAGER):
            try:
                reached.append(names.resolve(value.removeprefix(SECRETS_MANAGER).partition("#")[0]))
            except SecretNameError as exc:
                raise ValidationError(
                    f"source.properties: property {name!r}: {exc}", field="source.properties"
                ) from exc
        if any(namespace.holds(r) for r in reached):
            raise ValidationError(
                f"source.properties: property {name!r}: {namespace.refusal(ref)}", field="source.properties"
            )


def _check_source_secrets(asset: AssetRegistration) -> None:
    """Every ``secretsmanager:`` secret the source names must exist under the name the poller will look up
    (the stack's naming rule), as a rule's target secrets must: a 400 now, not a failing poll later. SSM
    references are the poller's to read (the API may not), and are not checked here."""
    if asset.source is None:
        return
    container = current()
    names = container.settings.secret_names
    for name, value in asset.source.properties.items():
        if not value.startswith(SECRETS_MANAGER):
            continue
        ref = value.removeprefix(SECRETS_MANAGER).partition("#")[0]
        where = f"source.properties: property {name!r}"
        try:
            found = container.secret_store.secret_exists(names.resolve(ref))
        except (SecretNameError, AuthorizationError) as exc:
            raise ValidationError(f"{where}: {exc}", field="source.properties") from exc
        if not found:
            raise ValidationError(f"{where}: {names.missing(ref)}", field="source.properties")


@router.get(
    "/assets",
    summary="List registered assets",
    tags=["assets"],
    security=MANAGEMENT,
    responses=answers(ok(AssetPage)),
)
def list_assets(limit: Limit = 100, next_token: NextToken = None) -> Response[str]:
    page = current().asset_registry.list_assets(limit, next_token)
    return json_response({"items": [a.to_api() for a in page.items], "nextToken": page.next_token})


@router.get(
    "/assets/state",
    summary="The asset's advance-only state",
    tags=["assets"],
    security=MANAGEMENT,
    responses=answers(ok(AssetStateAnswer), ALWAYS, 404),
)
def get_state(asset_key: AssetKeyQuery) -> Response[str]:
    key = _asset_key(asset_key)
    container = current()
    state = container.asset_store.get_state(key)
    registration = container.asset_registry.get_asset(key)
    if state is None and registration is None:
        raise NotFoundError(f"no state and no registration for {key!r}")
    body = state.to_api() if state else {"assetKey": key, "version": 0}
    body["registered"] = registration is not None
    if registration is not None and registration.source is not None:
        status = container.poll_status_store.get(key)
        body["pollStatus"] = status.to_api() if status else None
    return json_response(body)


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
