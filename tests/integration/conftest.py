"""Fixtures shared by the integration suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.lakehouse import CountingMotoServer


@pytest.fixture(scope="module")
def server() -> Iterator[CountingMotoServer]:
    """A moto server on 127.0.0.1 counting every request by service and operation, one per test module."""
    running = CountingMotoServer().start()
    yield running
    running.stop()
