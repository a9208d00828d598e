"""On AWS, operators push, send lineage and complete runs with IAM (SigV4) credentials through the IAM variants.

API Gateway fills ``requestContext.identity`` (``userArn``, ``caller``) only for a method with AWS_IAM
authorization; ``POST /asset-events``, ``POST /api/v1/lineage`` and ``POST /runs/{triggerKey}/complete``
have none (they take a producer's or a run's own credentials), so they never see the identity. Their IAM
variants under ``/iam`` do (``tests/integration/test_template_api_auth.py`` holds the template to it). The events
are API Gateway REST proxy events as ``events/ingest_api/push_events_iam.json`` records one, and the stack
has no admin token, as on AWS.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lakehook.container import Container
from lakehook.settings import Settings
from tests.integration.test_runs_api import DWD, KEY_SECRET, completion, completion_key, declare, make_claim
from tests.support import ROOT, FakeLambdaContext, load_handler

__all__ = ["completion_key"]  # fixture: the completion key secret on moto

SAMPLE = json.loads(Path(ROOT / "events" / "ingest_api" / "push_events_iam.json").read_text())
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"


@pytest.fixture
def settings() -> Settings:
    from tests.conftest import BUCKET, TABLE

    # On AWS: no admin token, management credentials are the identity API Gateway's IAM authorizer verified.
    return Settings(
        table_name=TABLE, bucket_name=BUCKET, admin_token=None, region="us-east-1", completion_key_secret=KEY_SECRET
    )


def request(path: str, body: Any, *, identity: bool = True) -> dict[str, Any]:
    """The sample's proxy event for POST ``path``: the IAM identity, or none (a method without an authorizer)."""
    event = copy.deepcopy(SAMPLE)
    event["headers"].pop("Authorization")  # the sample's bearer token is for the local stack; there is none here
    event["multiValueHeaders"].pop("Authorization")
    event["resource"] = event["path"] = event["requestContext"]["resourcePath"] = path
    event["requestContext"]["path"] = f"/prod{path}"
    event["body"] = body if isinstance(body, str) else json.dumps(body)
    if not identity:
        for field in ("userArn", "caller", "user", "accessKey"):
            event["requestContext"]["identity"][field] = None
    return event


def invoke(event: dict[str, Any]) -> tuple[int, Any]:
    answer = load_handler("ingest_api")(event, FakeLambdaContext())
    status = int(answer["statusCode"])
    assert status < 500, answer["body"]
    return status, json.loads(answer["body"]) if answer["body"] else None


def test_the_iam_push_sample_is_accepted_with_its_identity(container: Container) -> None:
    status, body = invoke(request("/iam/asset-events", json.loads(SAMPLE["body"])))
    assert status == 200, body
    assert [r["status"] for r in body["results"]] == ["ACCEPTED"]
    assert container.asset_store.get_state(PAYMENTS).latest_snapshot_id == 2001  # type: ignore[union-attr]


@pytest.mark.parametrize("path", ["/iam/asset-events", "/asset-events"])
def test_a_push_without_an_identity_or_a_signature_is_a_401(container: Container, path: str) -> None:
    status, body = invoke(request(path, json.loads(SAMPLE["body"]), identity=False))
    assert status == 401, body
    assert container.asset_store.get_state(PAYMENTS) is None


def test_an_operator_completes_a_run_with_iam_credentials(container: Container, table: Any) -> None:
    claim = make_claim(table)
    declare(container, [])
    outlet = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": 2001}
    status, body = invoke(request(f"/iam/runs/{claim}/complete", completion([outlet])))
    assert status == 200, body
    assert body["status"] == "SUCCEEDED" and [r["status"] for r in body["results"]] == ["ACCEPTED"]
    assert container.trigger_ledger.get(claim).run_status == "SUCCEEDED"  # type: ignore[union-attr]


@pytest.mark.parametrize("prefix", ["/iam", ""])
def test_a_completion_without_an_identity_or_a_token_is_a_401(container: Container, table: Any, prefix: str) -> None:
    claim = make_claim(table)
    declare(container, [])
    status, body = invoke(request(f"{prefix}/runs/{claim}/complete", completion([]), identity=False))
    assert status == 401, body
    assert container.trigger_ledger.get(claim).run_status is None  # type: ignore[union-attr]


def test_lineage_takes_the_identity_at_its_iam_variant_only(container: Container) -> None:
    # Authentication comes before the body: with the identity an unreadable body is a 400, without it a 401.
    assert invoke(request("/iam/api/v1/lineage", "{bad"))[0] == 400
    assert invoke(request("/iam/api/v1/lineage", "{bad", identity=False))[0] == 401
