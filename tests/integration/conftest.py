"""Fixtures shared by the integration suites."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from lakehook.adapters.secrets import SecretsManagerSecretStore
from lakehook.container import Container
from lakehook.local import moto_dynamodb, moto_locks
from lakehook.settings import Settings
from tests.integration.test_api import Api
from tests.integration.test_resolver_on_moto import Stream
from tests.lakehouse import CountingMotoServer


@pytest.fixture(scope="module")
def server() -> Iterator[CountingMotoServer]:
    """A moto server on 127.0.0.1 counting every request by service and operation, one per test module."""
    running = CountingMotoServer().start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def local_moto() -> Iterator[str]:
    """A ThreadedMotoServer on 127.0.0.1 as the local stack runs moto (its locks and DynamoDB adapter); its URL."""
    moto_locks.install()
    with moto_dynamodb.adapted():
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


# --- the ingest API on in-process moto (tests/integration/test_api.py's Api) ----------------------------------------


@pytest.fixture
def secrets_client(aws: None) -> Any:
    """Secrets Manager on the test's in-process moto."""
    return boto3.client("secretsmanager", region_name="us-east-1")


@pytest.fixture
def api(container: Container, settings: Settings, secrets_client: Any) -> Api:
    """The ingest API's handler on the test's container, its secrets in Secrets Manager (a module may define its own
    ``api``: the lineage and runs suites do)."""
    container.overrides["secret_store"] = SecretsManagerSecretStore(secrets_client)
    return Api(settings.admin_token or "")


@pytest.fixture
def producer(api: Api) -> str:
    """A registered producer (``orders-writer``) whose secret ``api`` signs its pushes with."""
    return api.register()


@pytest.fixture
def app(container: Container) -> Any:
    """The management API over the test's container (rules, triggers, explain)."""
    from lakehook.api.app import build_app

    return build_app()


@pytest.fixture
def stream(ddb_client: Any) -> Stream:
    """The table's stream, handed over in batches filtered as the resolver's FilterCriteria filter them."""
    return Stream(ddb_client)
