"""Racing completions over HTTP against a moto server: the first terminal status wins, exactly once.

Each thread has its own boto3 clients, as separate Lambda invocations of the API would, and completes the
same trigger with a different status or different outlets. One conditional write decides: exactly one
completion is recorded, every other one is a conflict, and only the winner's outlets reach the asset state.
The server applies one DynamoDB request at a time, the atomicity the real service gives per request
(see ``tests.racing`` for why moto needs that).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.container import Container
from lakehook.domain.errors import ConflictError
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import PinnedInput, Trigger
from lakehook.settings import Settings
from lakehook.usecases.completion import Caller, CompleteRun, CompletionResult
from tests import racing
from tests.fakes.memory_dispatch import InMemoryAliasStore
from tests.racing import atomic_dynamodb_server, race

TABLE = "lakehook-completion-race"
RACERS = 8
ROUNDS = 4
ODS = "paimon://lake/ods_db/ods_order_latest"
DWD = "paimon://lake/dwd_db/dwd_trade_event_fact"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with atomic_dynamodb_server(TABLE) as url:
        yield url


def table_at(url: str) -> Any:
    return racing.table_at(url, TABLE)


@pytest.fixture(scope="module")
def completers(endpoint: str) -> list[CompleteRun]:
    """One use case per racer, each on its own boto3 session (built once: sessions are slow to make)."""

    def completer() -> CompleteRun:
        mine = table_at(endpoint)  # the completion route's use case as the container builds it, on this table
        return Container.of(Settings(table_name=TABLE), table=mine, alias_store=InMemoryAliasStore()).complete_run

    return [completer() for _ in range(RACERS)]


def body_of(racer: int) -> dict[str, Any]:
    """Racer 0 reports FAILED; every other one SUCCEEDED with its own outlet snapshot."""
    if racer == 0:
        return {"status": "FAILED"}
    return {
        "status": "SUCCEEDED",
        "outlets": [{"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": racer}],
    }


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_racing_different_completions_record_exactly_one(
    endpoint: str, completers: list[CompleteRun], round_: int
) -> None:
    table = table_at(endpoint)
    outlet_asset = f"paimon://lake/dwd_db/race_{round_}"
    DynamoDBRuleStore(table).put_rule(
        Rule.model_validate(
            {
                "ruleId": f"race{round_}",
                "groups": [{"groupId": "g", "members": [{"assetKey": ODS}]}],
                "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
                "outlets": [outlet_asset],
            }
        ),
        1,
    )
    key = f"race{round_}.g.{round_:024x}"
    trigger = Trigger(
        trigger_key=key,
        rule_id=f"race{round_}",
        group_id="g",
        inputs=(PinnedInput(asset_key=ODS, snapshot_id=1),),
        created_at=1,
        updated_at=1,
    )
    assert DynamoDBTriggerStore(table).put_replay(trigger)

    def complete(i: int) -> CompletionResult | ConflictError:
        body = body_of(i)
        for outlet in body.get("outlets", []):
            outlet["assetKey"] = outlet_asset
        try:
            return completers[i](key, body, Caller.RUN)
        except ConflictError as exc:
            return exc

    results = race(RACERS, complete)
    winners = [i for i, r in enumerate(results) if isinstance(r, CompletionResult)]
    assert len(winners) == 1, results
    [winner] = winners
    assert all(isinstance(r, ConflictError) for i, r in enumerate(results) if i != winner)
    entry = DynamoDBTriggerLedger(table).get(key)
    assert entry is not None and entry.run_status == body_of(winner)["status"]
    state = DynamoDBAssetStore(table).get_state(outlet_asset)
    if winner == 0:
        assert state is None  # FAILED won: no outlet got in
    else:
        assert state is not None and state.latest_snapshot_id == winner and state.version == 1
