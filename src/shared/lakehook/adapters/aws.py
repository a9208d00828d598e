"""boto3 sessions and clients, built lazily so a moto server can start first."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

from lakehook.settings import Settings

_CONFIG = Config(retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=5, read_timeout=20)


def client(service: str, settings: Settings) -> Any:
    """A boto3 client for the service, pointed at the endpoint override when there is one."""
    session: Any = boto3.session.Session(region_name=settings.region)
    return session.client(service, endpoint_url=settings.endpoint_url, config=_CONFIG)


def dynamodb_table(settings: Settings) -> Any:
    """The lakehook table as a boto3 Table resource."""
    resource = boto3.session.Session(region_name=settings.region).resource(
        "dynamodb", endpoint_url=settings.endpoint_url, config=_CONFIG
    )
    return resource.Table(settings.table_name)


def is_conditional_failure(exc: Exception) -> bool:
    """Whether a botocore ClientError is a failed condition (not a real error)."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return code in {"ConditionalCheckFailedException", "TransactionCanceledException"}


def is_rejected_by_data(exc: BaseException) -> bool:
    """Whether DynamoDB refused a request for what it carried (``ValidationException``: an item over 400 KB, a
    number beyond its 38 digits), so retrying the same request can never succeed. Throttling, 5xx answers,
    timeouts and access errors are the infrastructure's and are not this."""
    from botocore.exceptions import ClientError

    return isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") == "ValidationException"
