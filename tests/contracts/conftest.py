"""Contract suites: each port's promises, run against its in-memory fake and its DynamoDB adapter alike.

A suite takes the ``backend`` fixture (parametrized ``memory`` / ``dynamodb``) and states what the port's
docstrings promise, so a fake that drifts from the adapter (or an adapter from the port) fails here. The
DynamoDB side runs on in-process moto with the table exactly as template.yaml declares it (see
``tests.support.create_table``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lakehook.adapters.dynamodb.alias_store import DynamoDBAliasStore
from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore
from lakehook.adapters.dynamodb.deferral_store import DynamoDBDeferralStore
from lakehook.adapters.dynamodb.notice_store import DynamoDBNoticeStore
from lakehook.adapters.dynamodb.partition_store import DynamoDBPartitionStore
from lakehook.adapters.dynamodb.poll_status_store import DynamoDBPollStatusStore
from lakehook.adapters.dynamodb.registry import DynamoDBAssetRegistry, DynamoDBProducerRegistry
from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.state_history import DynamoDBStateHistory
from lakehook.adapters.dynamodb.state_reader import DynamoDBStateReader
from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.adapters.dynamodb.watermark_store import DynamoDBWatermarkStore
from lakehook.adapters.s3.manifest_store import S3ManifestStore
from lakehook.adapters.s3.object_store import S3ObjectStore
from lakehook.adapters.secrets import SecretsManagerSecretStore
from lakehook.adapters.sqs import SQSWorkQueue
from lakehook.ports import AssetRegistry, AssetStore, ProducerRegistry, SecretStore, WatermarkStore
from lakehook.ports.aliases import AliasStore
from lakehook.ports.coverage import CoverageStore
from lakehook.ports.dispatch import ManifestStore, TriggerLedger
from lakehook.ports.lakehouse import PollStatusStore
from lakehook.ports.notices import NoticeStore
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.queue import WorkQueue
from lakehook.ports.rules import DeferralStore, RuleStore, StateHistory, StateReader, TriggerStore
from lakehook.ports.spool import ObjectStore
from lakehook.wire.spool_format import parse_s3_uri
from tests.fakes.memory import (
    InMemoryAssetRegistry,
    InMemoryAssetStore,
    InMemoryPollStatusStore,
    InMemoryProducerRegistry,
    InMemorySecretStore,
    InMemoryWatermarkStore,
    InMemoryWorkQueue,
)
from tests.fakes.memory_coverage import InMemoryCoverageStore, InMemoryObjectStore
from tests.fakes.memory_dispatch import InMemoryAliasStore, InMemoryManifestStore, InMemoryTriggerLedger
from tests.fakes.memory_notices import InMemoryNoticeStore
from tests.fakes.memory_partitions import InMemoryPartitionStore
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
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
    registry: AssetRegistry
    polls: PollStatusStore
    partitions: PartitionStore
    reader: StateReader  # reads what ``assets`` and ``triggers`` wrote
    notices: NoticeStore  # the notice state on ``registry``'s registrations


def memory_backend() -> Backend:
    triggers = InMemoryTriggerStore()
    assets = InMemoryAssetStore()
    registry = InMemoryAssetRegistry()
    return Backend(
        "memory",
        triggers,
        InMemoryTriggerLedger(triggers),
        InMemoryRuleStore(),
        assets,
        InMemoryWatermarkStore(),
        InMemoryDeferralStore(),
        InMemoryAliasStore(),
        InMemoryStateHistory(),
        InMemoryCoverageStore(),
        InMemoryProducerRegistry(),
        registry,
        InMemoryPollStatusStore(),
        InMemoryPartitionStore(),
        InMemoryStateReader(assets.get_state, triggers, events=lambda: [e.event for e in assets.events.values()]),
        InMemoryNoticeStore(registry),
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
        DynamoDBAssetRegistry(table),
        DynamoDBPollStatusStore(table),
        DynamoDBPartitionStore(table),
        DynamoDBStateReader(table),
        DynamoDBNoticeStore(table),
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


@pytest.fixture(params=IMPLEMENTATIONS)
def fresh_backend(request: pytest.FixtureRequest) -> Iterator[Callable[[], Backend]]:
    """For property tests (hypothesis runs many examples in one test): a factory of fresh backends of one
    implementation, each DynamoDB one on a table of its own under one moto."""
    if request.param == "memory":
        yield memory_backend
        return
    with mock_aws():
        yield lambda: dynamodb_backend(f"{CONTRACT_TABLE}-{next(_TABLES)}")


@pytest.fixture(scope="module")
def both() -> Iterator[Callable[[], tuple[Backend, Backend]]]:
    """For the differential tests: a factory of fresh (fake, adapter) pairs under one moto for the module."""
    with mock_aws():

        def fresh() -> tuple[Backend, Backend]:
            return memory_backend(), dynamodb_backend(f"{CONTRACT_TABLE}-{next(_TABLES)}")

        yield fresh


# --- the ports on S3 and Secrets Manager -----------------------------------------------------------------------


MANIFEST_BUCKET = "lakehook-contract-manifests"
DATA_BUCKET = "lakehook-contract-data"


@dataclass(frozen=True)
class ObjectBackend:
    """The S3-backed ports (run manifests, spool objects), and a hand outside them to put raw bytes at a URI
    (what a producer's upload or an operator's edit does)."""

    name: str
    manifests: ManifestStore
    objects: ObjectStore
    put_object: Callable[[str, bytes], None]


def memory_objects(chunk_size: int) -> ObjectBackend:
    manifests = InMemoryManifestStore(MANIFEST_BUCKET)
    objects = InMemoryObjectStore(chunk_size=chunk_size)

    def put(uri: str, data: bytes) -> None:
        objects.objects[uri] = data
        if uri.startswith(f"s3://{MANIFEST_BUCKET}/"):
            manifests.objects[uri] = data

    return ObjectBackend("memory", manifests, objects, put)


def s3_objects(chunk_size: int) -> ObjectBackend:
    """The S3 adapters on fresh buckets (call inside ``mock_aws``)."""
    client = boto3.client("s3", region_name="us-east-1")
    for bucket in (MANIFEST_BUCKET, DATA_BUCKET):
        client.create_bucket(Bucket=bucket)

    def put(uri: str, data: bytes) -> None:
        bucket, key = parse_s3_uri(uri)
        client.put_object(Bucket=bucket, Key=key, Body=data)

    return ObjectBackend("s3", S3ManifestStore(client, MANIFEST_BUCKET), S3ObjectStore(client, chunk_size), put)


OBJECT_CHUNK = 5  # small, so that a few bytes take several chunks


@pytest.fixture(params=("memory", "s3"))
def object_backend(request: pytest.FixtureRequest) -> Iterator[ObjectBackend]:
    """The fakes, then the S3 adapters on in-process moto."""
    if request.param == "memory":
        yield memory_objects(OBJECT_CHUNK)
        return
    with mock_aws():
        yield s3_objects(OBJECT_CHUNK)


@dataclass(frozen=True)
class SecretBackend:
    """A SecretStore, and a hand outside lakehook that creates a secret (an operator's, not lakehook's)."""

    name: str
    store: SecretStore
    create_foreign: Callable[[str, str], None]


def memory_secrets() -> SecretBackend:
    store = InMemorySecretStore()

    def create(name: str, value: str) -> None:
        store.secrets[name] = value

    return SecretBackend("memory", store, create)


def secretsmanager_secrets() -> SecretBackend:
    """The Secrets Manager adapter (call inside ``mock_aws``)."""
    client = boto3.client("secretsmanager", region_name="us-east-1")

    def create(name: str, value: str) -> None:
        client.create_secret(Name=name, SecretString=value)

    return SecretBackend("secretsmanager", SecretsManagerSecretStore(client), create)


@pytest.fixture(params=("memory", "secretsmanager"))
def secret_backend(request: pytest.FixtureRequest) -> Iterator[SecretBackend]:
    """The fake, then the Secrets Manager adapter on in-process moto."""
    if request.param == "memory":
        yield memory_secrets()
        return
    with mock_aws():
        yield secretsmanager_secrets()


@dataclass(frozen=True)
class QueueBackend:
    """A WorkQueue, and what a worker receives from it (every message body, as JSON; SQS promises no order)."""

    name: str
    queue: WorkQueue
    received: Callable[[], list[dict[str, Any]]]


def sqs_queue() -> QueueBackend:
    """The SQS adapter on a fresh standard queue, as template.yaml's poll queue is (call inside ``mock_aws``)."""
    client = boto3.client("sqs", region_name="us-east-1")
    url = client.create_queue(QueueName=f"lakehook-contract-{next(_TABLES)}")["QueueUrl"]

    def received() -> list[dict[str, Any]]:
        bodies: list[dict[str, Any]] = []
        while answer := client.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            bodies += [json.loads(m["Body"]) for m in answer]
            done = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(answer)]
            client.delete_message_batch(QueueUrl=url, Entries=done)
        return bodies

    return QueueBackend("sqs", SQSWorkQueue(client, url), received)


@pytest.fixture(params=("memory", "sqs"))
def queue_backend(request: pytest.FixtureRequest) -> Iterator[QueueBackend]:
    """The fake, then the SQS adapter on in-process moto."""
    if request.param == "memory":
        fake = InMemoryWorkQueue()
        yield QueueBackend("memory", fake, lambda: list(fake.messages))
        return
    with mock_aws():
        yield sqs_queue()
