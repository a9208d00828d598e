"""The test session's boto3 sessions share one botocore data loader (tests/botocore_loader.py), so moto's fresh
default session per ``mock_aws`` no longer parses botocore's JSON again; each session still works on its own."""

from __future__ import annotations

import boto3
from moto import mock_aws

from tests.support import create_table


def _loader_of_a_fresh_default_session() -> object:
    with mock_aws():  # moto drops boto3's default session as it starts
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, "loader-check")
        assert client.list_tables()["TableNames"] == ["loader-check"]
        return boto3.DEFAULT_SESSION._session.get_component("data_loader")  # type: ignore[union-attr]


def test_a_new_session_per_mock_reuses_the_loaded_botocore_data() -> None:
    first, second = _loader_of_a_fresh_default_session(), _loader_of_a_fresh_default_session()
    assert first is second


def test_sessions_keep_their_own_region_with_the_shared_loader() -> None:
    east = boto3.session.Session(region_name="us-east-1").client("sqs")
    west = boto3.session.Session(region_name="eu-west-1").client("sqs")
    assert (east.meta.region_name, west.meta.region_name) == ("us-east-1", "eu-west-1")
