"""The watermark store over HTTP: get, put, compare-and-set and delete per (namespace, asset, key).

GET and PUT also take a producer's signature (a custom watcher's credential, ``lakehook.client.watcher``), confined
to the producer's ``watermarkNamespaces``; DELETE needs management credentials (a signature covers the body only, and
a DELETE has none to bind it to the key)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import Deleted, WatermarkAnswer, WatermarkList
from lakehook.api.auth import PrincipalKind, current_principal
from lakehook.api.contract import ALWAYS, MANAGEMENT, PRODUCER, WITH_BODY, answers, ok
from lakehook.api.http import json_response
from lakehook.api.routes.assets import AssetKeyQuery, _asset_key
from lakehook.container import current
from lakehook.domain.errors import AuthorizationError, NotFoundError
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


def _confine(namespace: str) -> None:
    """A producer reaches only its ``watermarkNamespaces``; management credentials reach every namespace."""
    caller = current_principal()
    producer = caller.producer if caller.kind is PrincipalKind.PRODUCER else None
    if producer is not None and not producer.may_use_watermarks(namespace):
        raise AuthorizationError(
            f"producer {producer.producer_id!r} may not use watermark namespace {namespace!r} "
            "(watermarkNamespaces of PUT /producers/{producerId})"
        )


@router.get(
    "/watermarks",
    summary="Read one watermark, or every key of (namespace, asset)",
    description="Management credentials, or a producer's signature (over the empty body) for a namespace in its "
    "watermarkNamespaces (else 403).",
    tags=["watermarks"],
    security=PRODUCER,
    responses=answers(ok(WatermarkAnswer | WatermarkList, "with ?key=, that watermark; else every key"), ALWAYS, 404),
)
def get_watermark(
    namespace: Namespace, asset_key: AssetKeyQuery, key: Annotated[str | None, Query()] = None
) -> Response[str]:
    _confine(namespace)
    store = current().watermark_store
    asset = _asset_key(asset_key)
    if key is None:
        items = [WatermarkAnswer.from_domain(r) for r in store.list(namespace, asset)]
        return json_response(WatermarkList(items=items).dump())
    record = store.get(namespace, asset, key)
    if record is None:
        raise NotFoundError(f"no watermark {namespace}/{asset}/{key}")
    return json_response(WatermarkAnswer.from_domain(record).dump())


@router.put(
    "/watermarks",
    summary="Write a watermark; with expectedVersion, compare-and-set",
    description="Management credentials, or a producer's signature for a namespace in its watermarkNamespaces "
    "(else 403). A compare-and-set that lost is a 409.",
    tags=["watermarks"],
    security=PRODUCER,
    responses=answers(ok(WatermarkAnswer), WITH_BODY, 409),
)
def put_watermark(body: WatermarkPut, dry_run: DryRun = False) -> Response[str]:
    _confine(body.namespace)
    asset = _asset_key(body.asset_key)
    if dry_run:
        preview = preview_watermark_put(current().watermark_store, body, asset, now_ms())
        return json_response({**WatermarkAnswer.from_domain(preview).dump(), "dryRun": True})
    record = current().watermark_store.put(body.namespace, asset, body.key, body.value, now_ms(), body.expected_version)
    return json_response(WatermarkAnswer.from_domain(record).dump())


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
