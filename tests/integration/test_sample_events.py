"""The sample payloads under ``events/`` invoke their function's handler as written.

``events/<function>/*.json`` are API Gateway proxy events for ``sam local invoke`` and for readers.
Management samples carry both a bearer token (local mode) and an IAM identity (AWS mode); the test
swaps in this run's admin token. A push signature covers the current time, so the test re-signs
``push_events.json`` with the secret that ``put_producer.json`` just generated.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from lakehook import container as container_module
from lakehook.adapters.secrets import SecretsManagerSecretStore
from lakehook.container import Container
from lakehook.settings import Settings
from tests.support import ROOT, TEMPLATE, FakeLambdaContext, load_handler, signed_headers

EVENTS = ROOT / "events"
SAMPLES = {path.stem: path for path in sorted((EVENTS / "ingest_api").glob("*.json"))}

# The order a new user would try them in, and what each must answer.
SCENARIO: list[tuple[str, int]] = [
    ("get_openapi", 200),
    ("put_producer", 201),
    ("get_producer", 200),
    ("push_events", 200),
    ("push_events_iam", 200),
    ("put_asset", 201),
    ("list_assets", 200),
    ("get_state", 200),
    ("list_events", 200),
    ("put_watermark", 200),
    ("get_watermark", 200),
    ("delete_watermark", 200),
]


def load(name: str) -> dict[str, Any]:
    return dict(json.loads(SAMPLES[name].read_text()))


def set_header(event: dict[str, Any], name: str, value: str) -> None:
    """Set a header in both maps, as API Gateway fills both."""
    for existing in [k for k in event["headers"] if k.lower() == name.lower()]:
        del event["headers"][existing]
        event["multiValueHeaders"].pop(existing, None)
    event["headers"][name] = value
    event["multiValueHeaders"][name] = [value]


def invoke(event: dict[str, Any]) -> tuple[int, Any]:
    answer = load_handler("ingest_api")(copy.deepcopy(event), FakeLambdaContext())
    return int(answer["statusCode"]), json.loads(answer["body"]) if answer["body"] else None


def test_every_function_of_the_template_has_samples() -> None:
    for function in TEMPLATE.functions():
        samples = list((EVENTS / function.code_uri.name).glob("*.json"))
        assert samples, f"events/{function.code_uri.name}/ has no sample payload for {function.name}"


def test_every_ingest_api_sample_is_in_the_scenario() -> None:
    assert sorted(SAMPLES) == sorted(name for name, _ in SCENARIO)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_sample_is_a_route_of_the_template(name: str) -> None:
    event = load(name)
    (function,) = [f for f in TEMPLATE.functions() if f.code_uri.name == "ingest_api"]
    matches = [r for r in function.routes if r.match(event["httpMethod"], event["path"]) is not None]
    assert matches, f"{name}: {event['httpMethod']} {event['path']} is not a route of {function.name}"
    assert event["resource"] == event["requestContext"]["resourcePath"] == matches[0].path
    assert {k: [v] for k, v in event["headers"].items()} == event["multiValueHeaders"]


def create_the_samples_secret() -> None:
    """The secret ``put_asset``'s source names (``secretsmanager:lakehook/lake-s3``): an asset is refused when a
    secret its source names does not exist."""
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name="lakehook/lake-s3", SecretString="k")


def test_the_samples_run_in_order_against_the_handler(container: Container, settings: Settings) -> None:
    container.overrides["secret_store"] = SecretsManagerSecretStore(
        boto3.client("secretsmanager", region_name="us-east-1")
    )
    create_the_samples_secret()
    answers: dict[str, Any] = {}
    secret = ""
    for name, expected in SCENARIO:
        event = load(name)
        if "Authorization" in event["headers"]:
            set_header(event, "Authorization", f"Bearer {settings.admin_token}")
        if name == "push_events":
            producer = event["headers"]["X-Lakehook-Producer"]
            fresh = signed_headers(producer, secret, event["body"].encode())
            set_header(event, "X-Lakehook-Signature", fresh["X-Lakehook-Signature"])
        status, body = invoke(event)
        assert status == expected, (name, body)
        answers[name] = body
        if name == "put_producer":
            secret = body["secret"]

    pushed = json.loads(load("push_events")["body"])["events"]
    assert [r["status"] for r in answers["push_events"]["results"]] == ["ACCEPTED"] * len(pushed)
    assert [r["status"] for r in answers["push_events_iam"]["results"]] == ["ACCEPTED"]
    assert answers["get_state"]["latestSnapshotId"] == 1001 and answers["get_state"]["registered"] is True
    assert answers["get_state"]["qualityStatus"] == "PASSED"
    assert len(answers["list_events"]["items"]) == 2
    assert answers["list_assets"]["items"] == [answers["put_asset"]]
    assert answers["get_watermark"]["value"] == {"snapshotId": 1001}
    assert "/asset-events" in answers["get_openapi"]["paths"]


def test_management_samples_also_pass_as_iam_requests(container: Container, settings: Settings) -> None:
    # On AWS there is no admin token: API Gateway's IAM authorizer vouches for the caller's identity.
    iam = Container(settings.model_copy(update={"admin_token": None}))
    iam.overrides["table"] = container.table
    container_module.use(iam)
    create_the_samples_secret()
    status, body = invoke(load("put_asset"))
    assert status == 201, body
    event = load("list_assets")
    event["requestContext"]["identity"]["userArn"] = None
    event["requestContext"]["identity"]["caller"] = None
    status, body = invoke(event)
    assert status == 401 and "IAM" in body["message"]


def test_the_push_sample_as_committed_is_refused_for_its_stale_signature(container: Container) -> None:
    container.overrides["secret_store"] = SecretsManagerSecretStore(
        boto3.client("secretsmanager", region_name="us-east-1")
    )
    put = load("put_producer")
    set_header(put, "Authorization", f"Bearer {container.settings.admin_token}")
    assert invoke(put)[0] == 201
    status, body = invoke(load("push_events"))
    assert status == 401 and "tolerance" in body["message"]


def test_samples_are_plain_json_files() -> None:
    for path in EVENTS.rglob("*"):
        if path.is_file():
            assert path.suffix == ".json", path
            json.loads(Path(path).read_text())
