"""Contract suites: each port's promises, run against its in-memory fake and its DynamoDB adapter alike.

A suite takes the ``backend`` fixture (parametrized ``memory`` / ``dynamodb``) and states what the port's
docstrings promise, so a fake that drifts from the adapter (or an adapter from the port) fails here. The
DynamoDB side runs on in-process moto with the table exactly as template.yaml declares it (see
``tests.support.create_table``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto import mock_aws

from lakehook.adapters.dynamodb.alias_store import DynamoDBAliasStore
from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore
from lakehook.adapters.dynamodb.deferral_store import DynamoDBDeferralStore
from lakehook.adapters.dynamodb.registry import DynamoDBProducerRegistry
from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.state_history import DynamoDBStateHistory
from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.adapters.dynamodb.watermark_store import DynamoDBWatermarkStore
from lakehook.ports import AssetStore, ProducerRegistry, WatermarkStore
from lakehook.ports.aliases import AliasStore
from lakehook.ports.coverage import CoverageStore
from lakehook.ports.dispatch import TriggerLedger
from lakehook.ports.rules import DeferralStore, RuleStore, StateHistory, TriggerStore
from tests.fakes.memory import InMemoryAssetStore, InMemoryProducerRegistry, InMemoryWatermarkStore
from tests.fakes.memory_coverage import InMemoryCoverageStore
from tests.fakes.memory_dispatch import InMemoryAliasStore, InMemoryTriggerLedger
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryTriggerStore,
)
from tests.support import create_table

IMPLEMENTATIONS = ("memory", "dynamodb")
CONTRACT_TABLE = "lakehook-contract"
_TABLES = itertools.count()


@dataclass(frozen=True)
class Backend:
    """One implementation of the ports over one store: the ledger works on the trigger store's claims."""

    name: str
    triggers: TriggerStore
    ledger: TriggerLedger
    rules: RuleStore
    assets: AssetStore
    watermarks: WatermarkStore
    deferrals: DeferralStore
    aliases: AliasStore
    history: StateHistory
    coverage: CoverageStore
    producers: ProducerRegistry


def memory_backend() -> Backend:
    triggers = InMemoryTriggerStore()
    return Backend(
        "memory",
        triggers,
        InMemoryTriggerLedger(triggers),
        InMemoryRuleStore(),
        InMemoryAssetStore(),
        InMemoryWatermarkStore(),
        InMemoryDeferralStore(),
        InMemoryAliasStore(),
        InMemoryStateHistory(),
        InMemoryCoverageStore(),
        InMemoryProducerRegistry(),
    )


def dynamodb_backend(table_name: str = CONTRACT_TABLE) -> Backend:
    """The DynamoDB adapters on a fresh table (call inside ``mock_aws``)."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_table(client, table_name)
    table = boto3.resource("dynamodb", region_name="us-east-1").Table(table_name)
    return Backend(
        "dynamodb",
        DynamoDBTriggerStore(table),
        DynamoDBTriggerLedger(table),
        DynamoDBRuleStore(table),
        DynamoDBAssetStore(table),
        DynamoDBWatermarkStore(table),
        DynamoDBDeferralStore(table),
        DynamoDBAliasStore(table),
        DynamoDBStateHistory(table),
        DynamoDBCoverageStore(table),
        DynamoDBProducerRegistry(table),
    )


@pytest.fixture(params=IMPLEMENTATIONS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """The fake, then the DynamoDB adapter on in-process moto."""
    if request.param == "memory":
        yield memory_backend()
        return
    with mock_aws():
        # a table of its own: inside another test's moto (the module's ``both``) this moto starts with that state
        yield dynamodb_backend(f"{CONTRACT_TABLE}-{next(_TABLES)}")


@pytest.fixture(scope="module")
def both() -> Iterator[Callable[[], tuple[Backend, Backend]]]:
    """For the differential tests: a factory of fresh (fake, adapter) pairs under one moto for the module."""
    with mock_aws():

        def fresh() -> tuple[Backend, Backend]:
            return memory_backend(), dynamodb_backend(f"{CONTRACT_TABLE}-{next(_TABLES)}")

        yield fresh
