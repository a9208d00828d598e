"""Coverage over HTTP: is ``[start, end)`` of an asset covered, which share of it, and which gaps are missing."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from lakehook.api.answers import CoverageReport
from lakehook.api.contract import MANAGEMENT, answers, ok
from lakehook.api.http import json_response
from lakehook.api.routes.assets import AssetKeyQuery, _asset_key
from lakehook.container import current
from lakehook.domain.coverage import CoverageAnswer
from lakehook.domain.errors import ValidationError
from lakehook.domain.time import ms_to_iso, parse_instant_ms
from lakehook.ports.coverage import CoverageStore
from lakehook.usecases.coverage import QueryCoverage

router = APIGatewayRouter()

Instant = Annotated[str, Query(min_length=1, max_length=64, description="ISO 8601 in UTC, or epoch milliseconds")]
PartitionQuery = Annotated[
    str | None,
    Query(
        alias="partitionKey",
        max_length=512,
        description="the coverage of the INTERVAL_COVERED events naming this partitionKey (a stack with "
        "CoveragePerPartition, the default); absent: the asset's, every partition's together",
    ),
]


def _instant(value: str, name: str) -> int:
    try:
        return parse_instant_ms(value)  # within 1970 … 9999, as every stored instant
    except ValueError as exc:
        raise ValidationError(f"{name}: {exc}", field=name) from exc


def coverage_query() -> QueryCoverage:
    """The use case over the container's coverage store (an override named ``coverage_store`` in tests)."""
    container = current()
    store: CoverageStore = container.coverage_store
    return QueryCoverage(store, per_partition=container.settings.coverage_per_partition)


def answer_body(answer: CoverageAnswer) -> dict[str, object]:
    body: dict[str, object] = {
        "assetKey": answer.asset_key,
        "start": ms_to_iso(answer.start),
        "end": ms_to_iso(answer.end),
        "covered": answer.covered,
        "missing": [{"start": ms_to_iso(g.start), "end": ms_to_iso(g.end)} for g in answer.missing],
        "coveredRatio": answer.ratio,
        "coveredMs": answer.covered_ms,
        "totalMs": answer.total_ms,
    }
    if answer.partition_key is not None:
        body["partitionKey"] = answer.partition_key
    return body


@router.get(
    "/assets/coverage",
    summary="Whether [start, end) is covered, how much of it, and the missing gaps",
    tags=["assets"],
    security=MANAGEMENT,
    responses=answers(ok(CoverageReport)),
)
def get_coverage(
    asset_key: AssetKeyQuery, start: Instant, end: Instant, partition_key: PartitionQuery = None
) -> Response[str]:
    key = _asset_key(asset_key)
    answer = coverage_query().query(key, _instant(start, "start"), _instant(end, "end"), partition_key)
    return json_response(answer_body(answer))
