"""Fixtures shared by the integration suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from lakehook.local import moto_dynamodb, moto_locks
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
