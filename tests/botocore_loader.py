"""One botocore data loader per process for the test session, instead of one per boto3 session.

moto's ``mock_aws`` drops boto3's default session on every start (each test's ``aws`` fixture, each contract
example's backend), and a new session builds a new loader that parses botocore's JSON again: the endpoints, the
partitions, each service's model and paginators. That was about two thirds of a unit test's ``aws`` fixture
(226 ms of CPU, 82 ms with one loader; bench/test-suite.md). The loader only reads botocore's data files,
which do not change while the tests run, and a session already hands the same loaded models to every client it
makes; sharing it across sessions changes no client's behaviour (credentials, region and configuration stay per
session).
"""

from __future__ import annotations

import functools

import botocore.loaders
import botocore.session

_shared_loader = functools.cache(botocore.loaders.create_loader)  # one per AWS_DATA_PATH value


def share() -> None:
    """New botocore sessions in this process take the shared loader (idempotent)."""
    botocore.session.create_loader = _shared_loader  # type: ignore[attr-defined]
