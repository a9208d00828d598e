"""The resolver, dispatcher, deferral sweep and trigger compensator run their sample events (events/<fn>/)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from lakehook.container import Container
from tests.conftest import BUCKET
from tests.support import ROOT, FakeLambdaContext, load_handler


def sample(function: str, name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / function / f"{name}.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("function", "name", "expected"),
    [
        ("resolver", "state_change", {"batchItemFailures": []}),
        ("resolver", "carried_partitions", {"batchItemFailures": []}),
        ("resolver", "partition_part", {"batchItemFailures": []}),
        ("dispatcher", "claim_inserted", {"batchItemFailures": []}),
        ("deferral_sweep", "scheduled_event", {"due": 0}),
        ("trigger_redrive", "scheduled_event", {}),
    ],
)
def test_each_stream_and_schedule_function_runs_its_sample(
    container: Container, function: str, name: str, expected: dict[str, Any]
) -> None:
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    assert load_handler(function)(sample(function, name), FakeLambdaContext()) == expected


def test_the_samples_are_what_the_filters_let_through() -> None:
    from lakehook.adapters.dynamodb.stream_records import RESOLVER_FILTER_PATTERNS
    from lakehook.adapters.dynamodb.trigger_ledger import DISPATCH_FILTER_PATTERNS
    from lakehook.local.filters import matches_any
    from tests.support import TEMPLATE

    resolver_record = sample("resolver", "state_change")["Records"][0]
    claim_record = sample("dispatcher", "claim_inserted")["Records"][0]
    assert matches_any(resolver_record, RESOLVER_FILTER_PATTERNS)
    part_record = sample("resolver", "partition_part")["Records"][0]
    assert matches_any(part_record, RESOLVER_FILTER_PATTERNS)
    assert not matches_any({**part_record, "eventName": "MODIFY"}, RESOLVER_FILTER_PATTERNS)
    assert not matches_any(claim_record, RESOLVER_FILTER_PATTERNS)
    assert matches_any(claim_record, DISPATCH_FILTER_PATTERNS)
    assert not matches_any(resolver_record, DISPATCH_FILTER_PATTERNS)
    declared = {f.name: [p for s in f.streams for p in s.filters] for f in TEMPLATE.functions() if f.streams}
    assert declared == {"ResolverFunction": RESOLVER_FILTER_PATTERNS, "DispatcherFunction": DISPATCH_FILTER_PATTERNS}
