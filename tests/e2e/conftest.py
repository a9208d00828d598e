"""The local stack, started once per module: moto on loopback and the template's functions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from lakehook.local.runtime import LocalStack

ADMIN = "e2e-admin-token"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(port=0, admin_token=ADMIN) as running:
        yield running


@pytest.fixture
def admin() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}


@pytest.fixture
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session
