"""The watermark store over HTTP: get, put, compare-and-set and delete per (namespace, asset, key)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import Deleted, WatermarkAnswer, WatermarkList
from lakehook.api.contract import ALWAYS, MANAGEMENT, WITH_BODY, answers, ok
from lakehook.api.http import json_response
from lakehook.api.routes.assets import AssetKeyQuery, _asset_key
from lakehook.container import current
from lakehook.domain.errors import NotFoundError
from lakehook.domain.limits import MAX_LONG
from lakehook.domain.time import now_ms
from lakehook.domain.watermarks import KEY, NAMESPACE, WatermarkPut
from lakehook.usecases.watermarks import preview_watermark_put

router = APIGatewayRouter()

Namespace = Annotated[str, Query(pattern=NAMESPACE.pattern)]
WmKey = Annotated[str, Query(pattern=KEY.pattern)]
DryRun = Annotated[
    bool, Query(alias="dryRun", description="validate fully, write nothing, answer what would be written")
]


@router.get(
    "/watermarks",
    summary="Read one watermark, or every key of (namespace, asset)",
    tags=["watermarks"],
    security=MANAGEMENT,
    responses=answers(ok(WatermarkAnswer | WatermarkList, "with ?key=, that watermark; else every key"), ALWAYS, 404),
)
def get_watermark(
    namespace: Namespace, asset_key: AssetKeyQuery, key: Annotated[str | None, Query()] = None
) -> Response[str]:
    store = current().watermark_store
    asset = _asset_key(asset_key)
    if key is None:
        return json_response({"items": [r.to_api() for r in store.list(namespace, asset)]})
    record = store.get(namespace, asset, key)
    if record is None:
        raise NotFoundError(f"no watermark {namespace}/{asset}/{key}")
    return json_response(record.to_api())


@router.put(
    "/watermarks",
    summary="Write a watermark; with expectedVersion, compare-and-set",
    tags=["watermarks"],
    security=MANAGEMENT,
    responses=answers(ok(WatermarkAnswer), WITH_BODY, 409),
)
def put_watermark(body: WatermarkPut, dry_run: DryRun = False) -> Response[str]:
    asset = _asset_key(body.asset_key)
    if dry_run:
        return json_response(preview_watermark_put(current().watermark_store, body, asset, now_ms()))
    record = current().watermark_store.put(body.namespace, asset, body.key, body.value, now_ms(), body.expected_version)
    return json_response(record.to_api())


@router.delete(
    "/watermarks",
    summary="Delete a watermark (optionally only at a version)",
    tags=["watermarks"],
    security=MANAGEMENT,
    responses=answers(ok(Deleted), ALWAYS, 404, 409),
)
def delete_watermark(
    namespace: Namespace,
    asset_key: AssetKeyQuery,
    key: WmKey,
    expected_version: Annotated[int | None, Query(alias="expectedVersion", ge=1, le=MAX_LONG)] = None,
) -> Response[str]:
    asset = _asset_key(asset_key)
    if not current().watermark_store.delete(namespace, asset, key, expected_version):
        raise NotFoundError(f"no watermark {namespace}/{asset}/{key}")
    return json_response({"deleted": True})
