"""Shared fixtures: in-process moto with the table from template.yaml, and a wired container."""

from __future__ import annotations

import os
import unittest
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

# Fake credentials and a region for every boto3 client the tests make; never real AWS.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Lakehook")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_DEV", "false")

from moto import mock_aws

import tests.hypothesis_profiles  # noqa: F401  (registers and loads the hypothesis profiles)
from lakehook import container as container_module
from lakehook.container import Container
from lakehook.local import moto_dynamodb
from lakehook.settings import Settings
from tests import botocore_loader
from tests.support import RequestCounter, create_table

botocore_loader.share()  # every test's boto3 sessions read botocore's data files once per process

pytest_plugins = ["tests.cpu_times", "pytester"]  # pytester: the unit socket guard's own tests

TABLE = "lakehook-test"
BUCKET = "lakehook-test-manifests"
ADMIN_TOKEN = "test-admin-token"


@pytest.fixture
def aws() -> Iterator[None]:
    # moto adapted as the local stack runs it: a cancelled transaction (a copy of a recorded event, a stale one) is
    # rolled back in place, where stock moto swaps in a copy of the table and orphans every open stream iterator
    with mock_aws(), moto_dynamodb.adapted():
        yield


@pytest.fixture
def settings() -> Settings:
    return Settings(table_name=TABLE, bucket_name=BUCKET, admin_token=ADMIN_TOKEN, region="us-east-1")


@pytest.fixture
def ddb_client(aws: None) -> Any:
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_table(client, TABLE)
    return client


@pytest.fixture
def table(ddb_client: Any) -> Any:
    return boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)


@pytest.fixture
def counter(table: Any) -> RequestCounter:
    return RequestCounter().attach(table.meta.client)


@pytest.fixture
def container(settings: Settings, table: Any) -> Iterator[Container]:
    """A container on in-process moto; the API handlers use it."""
    wired = Container(settings)
    wired.overrides["table"] = table  # share the counted client
    container_module.use(wired)
    yield wired
    container_module.use(None)


def is_state_machine(item: pytest.Item) -> bool:
    """A Hypothesis state machine's test (``Machine.TestCase``): many examples of many steps each."""
    cls = getattr(item, "cls", None)
    return cls is not None and issubclass(cls, unittest.TestCase) and cls.__qualname__.endswith(".TestCase")


# pytest-timeout's safety net for an e2e test without its own: a module's local stack (and the console's demo and
# browser) starts inside its first test's time, and at a load of 10 on two cores the console's took over the 300 s
# default (15 errors in one whole run, bench/test-suite.md); a hang is still stopped, a slow start no longer fails.
E2E_TIMEOUT = 900


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every e2e test (it drives the local stack) and every state machine is slow: the fast tier
    (``-m "not slow"``) leaves them out, ``make test`` runs them with the full Hypothesis profile. An e2e test
    without a timeout of its own gets :data:`E2E_TIMEOUT`."""
    for item in items:
        e2e = item.get_closest_marker("e2e") is not None or "/tests/e2e/" in item.path.as_posix()
        if e2e or is_state_machine(item):
            item.add_marker(pytest.mark.slow)
        if e2e and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT))
    run_slow_modules_first(items)


def run_slow_modules_first(items: list[pytest.Item]) -> None:
    """The modules with a slow test first (each module's tests together and in their order, the modules otherwise in
    collection order): pytest-xdist hands the workers whole modules in this order (``make pytest`` passes
    ``--no-loadscope-reorder``), so the long ones start early and the many short ones even out the end, where a state
    machine (20 s) or an e2e story had run last on one worker while the others had finished."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)
