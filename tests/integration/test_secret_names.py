"""One naming rule for target and source secrets, on moto: a secret made with ``lakehook secret put NAME`` is
found by ``PUT /rules`` and by the dispatcher under NAME as typed, as the CLI printed it, or by its ARN."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.secrets import SecretsManagerSecretStore
from lakehook.cli import main
from lakehook.container import Container
from lakehook.domain.dispatch import Invocation, Outcome, OutcomeKind, RunManifest
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import PinnedInput, Trigger, trigger_key
from lakehook.ports.lakehouse import SourceAccessError
from lakehook.settings import Settings
from tests.conftest import ADMIN_TOKEN, BUCKET, TABLE
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.integration.test_api import Api

STACK = "my-stack"
PREFIX = f"lakehook/{STACK}/"
DEPLOYED_URL = "https://abc123.execute-api.us-east-1.amazonaws.com/prod"
SIGNING_KEY = "the-receivers-signing-key"
ORDERS = "paimon://lake/ods_db/ods_order_latest"
T0 = 1_750_000_000_000


@pytest.fixture
def settings() -> Settings:
    return Settings(
        table_name=TABLE,
        bucket_name=BUCKET,
        admin_token=ADMIN_TOKEN,
        region="us-east-1",
        secret_prefix=PREFIX,
        producer_secret_prefix=f"lakehook-producers/{STACK}/",
        allow_insecure_loopback_targets=True,  # the receiver listens on loopback
    )


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(SIGNING_KEY) as server:
        yield server


def secret_put(name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """``lakehook secret put NAME`` against the deployed stack (Secrets Manager on moto); the printed ref."""
    monkeypatch.delenv("LAKEHOOK_ADMIN_TOKEN", raising=False)
    argv = ["--url", DEPLOYED_URL, "--output", "json", "secret", "put", name, "--value", SIGNING_KEY]
    assert main([*argv, "--stack", STACK]) == 0
    return str(json.loads(capsys.readouterr().out)["secretRef"])


def rule(url: str, ref: str) -> dict[str, Any]:
    return {
        "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}]}],
        "target": {"type": "webhook", "url": url, "secretRef": ref, "timeoutSeconds": 2},
    }


def start(container: Container, stored: dict[str, Any]) -> Outcome:
    """What the container's webhook plug-in does with the rule's target: the dispatcher's own path."""
    pins = (PinnedInput(asset_key=ORDERS, snapshot_id=1),)
    trigger = Trigger(
        trigger_key=trigger_key("dwd", "g", pins, None, 0),
        rule_id="dwd",
        group_id="g",
        inputs=pins,
        created_at=T0,
        updated_at=T0,
    )
    invocation = Invocation.of(trigger, RunManifest.for_trigger(trigger), "s3://m/x.json", 1)
    target = Rule.model_validate({**stored, "ruleId": "dwd"}).target
    return container.target_clients["webhook"].start(invocation, target)


@pytest.mark.parametrize("typed", ["targets/dwd", "/targets/dwd", f"{PREFIX}targets/dwd"])
@pytest.mark.parametrize("spelling", ["as typed", "as printed", "by its ARN"])
def test_a_secret_put_by_the_cli_is_found_at_put_and_at_dispatch_under_the_name_given(
    api: Api,
    container: Container,
    secrets_client: Any,
    receiver: WebhookReceiver,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    typed: str,
    spelling: str,
) -> None:
    # GIVEN a secret made with `lakehook secret put <typed>`
    printed = secret_put(typed, capsys, monkeypatch)
    assert printed == f"{PREFIX}targets/dwd"
    arn = secrets_client.describe_secret(SecretId=printed)["ARN"]
    ref = {"as typed": typed, "as printed": printed, "by its ARN": arn}[spelling]
    # WHEN a rule's target names it so
    body = rule(f"{receiver.base_url}/hooks/dwd", ref)
    answer = api.call("PUT", "/rules/dwd", body)
    # THEN the write accepts it, keeps it as written, and the dispatcher signs with that secret
    assert answer.status == 201, answer.body
    assert answer.body["target"]["secretRef"] == ref
    assert start(container, body).kind is OutcomeKind.STARTED
    assert len(receiver.payloads) == 1  # the receiver verified the signature with the same key


def test_a_missing_secret_is_refused_at_put_naming_the_name_looked_up_and_the_rule(
    api: Api, secrets_client: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_put("targets/dwd", capsys, monkeypatch)
    answer = api.call("PUT", "/rules/dwd", rule("https://scheduler.example.com/hooks/dwd", "targets/none"))
    assert answer.status == 400 and answer.body["field"] == "target.secretRef", answer.body
    message = answer.body["message"]
    assert f"looked up as '{PREFIX}targets/none'" in message
    assert f"under {PREFIX} unless it already starts with it" in message
    assert "lakehook secret put targets/none" in message
    # an ARN of a secret outside the stack's prefix is refused, whether it exists or not
    outside = secrets_client.create_secret(Name="elsewhere/dwd", SecretString="x")["ARN"]
    answer = api.call("PUT", "/rules/dwd", rule("https://scheduler.example.com/hooks/dwd", outside))
    assert answer.status == 400 and f"outside {PREFIX}*" in answer.body["message"], answer.body
    # a name the prefix would turn into no valid secret name is refused too (4xx, not a dispatch failure)
    answer = api.call("PUT", "/rules/dwd", rule("https://scheduler.example.com/hooks/dwd", "x" * 512))
    assert answer.status == 400 and "not a valid secret name" in answer.body["message"], answer.body


def test_a_secret_removed_after_the_write_fails_the_dispatch_naming_the_name_looked_up(
    api: Api,
    container: Container,
    secrets_client: Any,
    receiver: WebhookReceiver,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret_put("targets/dwd", capsys, monkeypatch)
    body = rule(f"{receiver.base_url}/hooks/dwd", "targets/dwd")
    assert api.call("PUT", "/rules/dwd", body).status == 201
    secrets_client.delete_secret(SecretId=f"{PREFIX}targets/dwd", ForceDeleteWithoutRecovery=True)
    outcome = start(container, body)
    assert outcome.kind is OutcomeKind.FATAL and f"looked up as '{PREFIX}targets/dwd'" in (outcome.reason or "")
    assert receiver.payloads == []


def test_a_sources_secretsmanager_reference_follows_the_same_rule(
    settings: Settings, secrets_client: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAKEHOOK_ADMIN_TOKEN", raising=False)
    argv = ["--url", DEPLOYED_URL, "--output", "json", "secret", "put", "lake/keys", "--stack", STACK]
    assert main([*argv, "--value", json.dumps({"id": "AKIA", "secret": "s"})]) == 0
    printed = json.loads(capsys.readouterr().out)["secretRef"]
    resolver = CredentialResolver(SecretsManagerSecretStore(secrets_client), names=settings.secret_names)
    for ref in ("lake/keys", printed):
        assert resolver.resolve({"s3.access-key-id": f"secretsmanager:{ref}#id"}).values == {"s3.access-key-id": "AKIA"}
    with pytest.raises(SourceAccessError, match=f"looked up as '{PREFIX}lake/none'"):
        resolver.resolve({"s3.access-key-id": "secretsmanager:lake/none#id"})


def test_put_assets_finds_a_sources_secret_by_the_same_rule_and_refuses_a_missing_one(
    api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_put("lake/keys", capsys, monkeypatch)

    def asset(ref: str) -> dict[str, Any]:
        properties = {"type": "glue", "s3.access-key-id": f"secretsmanager:{ref}#id"}
        source = {"catalog": "glue", "table": "ods_db.orders", "properties": properties}
        return {"assetKey": "iceberg://glue/ods_db/orders", "format": "iceberg", "source": source}

    for ref in ("lake/keys", f"{PREFIX}lake/keys"):
        assert api.call("PUT", "/assets", asset(ref)).status in (200, 201)
    for query in (None, {"dryRun": "true"}):
        answer = api.call("PUT", "/assets", asset("lake/none"), query=query)
        assert answer.status == 400 and answer.body["field"] == "source.properties", answer.body
        assert f"looked up as '{PREFIX}lake/none'" in answer.body["message"]


@pytest.mark.parametrize(
    "typed",
    [
        f"lakehook-producers/{STACK}/orders-writer",  # the namespace, typed: the prefix used to move it elsewhere
        f"/lakehook-producers/{STACK}/orders-writer",
        f"LAKEHOOK-PRODUCERS/{STACK}/orders-writer",
        "producers/orders-writer",  # where producers registered before the namespace keep theirs
        f"{PREFIX}producers/orders-writer",
    ],
)
def test_secret_put_and_a_rule_agree_on_a_producer_secrets_name_both_refuse_it(
    api: Api, secrets_client: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, typed: str
) -> None:
    monkeypatch.delenv("LAKEHOOK_ADMIN_TOKEN", raising=False)
    argv = ["--url", DEPLOYED_URL, "secret", "put", typed, "--value", SIGNING_KEY, "--stack", STACK]
    assert main(argv) == 1
    said = capsys.readouterr().err
    assert f"{typed!r} names a producer signing secret" in said and "a rule refuses it too" in said
    assert secrets_client.list_secrets()["SecretList"] == []  # nothing written, under no name
    answer = api.call("PUT", "/rules/dwd", rule("https://scheduler.example.com/hooks/dwd", typed))
    assert answer.status == 400 and "is a producer signing secret" in answer.body["message"], answer.body
