"""Write-time validation through the API handler on moto: target secrets must exist in Secrets Manager,
and ``?dryRun=true`` on every PUT checks what the write checks and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_api import Api

ORDERS = "paimon://lake/ods_db/ods_order_latest"
WEBHOOK = {"type": "webhook", "url": "https://scheduler.example.com/hooks/dwd", "secretRef": "lakehook/targets/dwd"}
RULE = {
    "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS, "condition": {"qualityStatus": "PASSED"}}]}],
    "target": WEBHOOK,
}


def items(table: Any) -> int:
    return int(table.scan(Select="COUNT")["Count"])


def secrets(client: Any) -> int:
    return len(client.list_secrets(IncludePlannedDeletion=True)["SecretList"])


def test_a_rule_naming_a_missing_secret_is_refused_until_it_exists(api: Api, secrets_client: Any, table: Any) -> None:
    answer = api.call("PUT", "/rules/dwd", RULE)
    assert answer.status == 400 and answer.body["field"] == "target.secretRef", answer.body
    assert "lakehook/targets/dwd" in answer.body["message"] and items(table) == 0

    secrets_client.create_secret(Name="lakehook/targets/dwd", SecretString="signing-key")
    assert api.call("PUT", "/rules/dwd", RULE).status == 201

    # a secret scheduled for deletion no longer counts
    secrets_client.delete_secret(SecretId="lakehook/targets/dwd", RecoveryWindowInDays=7)
    answer = api.call("PUT", "/rules/dwd", {**RULE, "description": "again"})
    assert answer.status == 400 and answer.body["field"] == "target.secretRef"


def test_airflow_and_dolphinscheduler_name_their_own_secret_fields(api: Api, secrets_client: Any) -> None:
    airflow = {"type": "airflow", "baseUrl": "https://af.example.com", "dagId": "d", "credentialsRef": "lakehook/af"}
    answer = api.call("PUT", "/rules/af", {**RULE, "target": airflow})
    assert answer.status == 400 and answer.body["field"] == "target.credentialsRef"
    ds = {
        "type": "dolphinscheduler",
        "baseUrl": "https://ds.example.com/ds",
        "projectCode": 1,
        "processDefinitionCode": 2,
        "tokenRef": "lakehook/ds",
    }
    answer = api.call("PUT", "/rules/ds", {**RULE, "target": ds})
    assert answer.status == 400 and answer.body["field"] == "target.tokenRef"


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"type": "webhok"}, "target.type"),
        ({"type": "webhook", "secretRef": "lakehook/targets/dwd"}, "target.url"),
        ({"type": "webhook", "url": "https://scheduler.example.com/"}, "target.secretRef"),
        ({**WEBHOOK, "url": "file:///etc/passwd"}, "target.url"),
        ({**WEBHOOK, "url": "gopher://scheduler.example.com/"}, "target.url"),
        ({**WEBHOOK, "url": "https://[fd00:ec2::254]/latest"}, "target.url"),
        (
            {
                "type": "dolphinscheduler",
                "baseUrl": "https://ds.example.com/ds",
                "projectCode": 1,
                "processDefinitionCode": 2,
                "tokenRef": "lakehook/ds",
                "apiVersion": "3.4",
            },
            "target.apiVersion",
        ),
    ],
)
def test_bad_targets_are_400s_through_the_api(api: Api, table: Any, target: dict[str, Any], field: str) -> None:
    for query in (None, {"dryRun": "true"}):
        answer = api.call("PUT", "/rules/dwd", {**RULE, "target": target}, query=query)
        assert answer.status == 400 and answer.body["field"] == field, answer.body
    assert items(table) == 0


def test_dry_run_on_every_put_validates_fully_and_writes_nothing(api: Api, secrets_client: Any, table: Any) -> None:
    secrets_client.create_secret(Name="lakehook/targets/dwd", SecretString="signing-key")
    before = (items(table), secrets(secrets_client))
    dry = {"dryRun": "true"}

    producer = api.call("PUT", "/producers/ods-writer", {"assetKeyPrefixes": ["paimon://lake/ods_db/"]}, query=dry)
    assert producer.status == 200 and producer.body["dryRun"] is True and "secret" not in producer.body
    assert producer.body["assetKeyPrefixes"] == ["paimon://lake/ods_db/"]
    asset = api.call("PUT", "/assets", {"assetKey": ORDERS, "format": "paimon"}, query=dry)
    assert asset.status == 200 and asset.body == {**asset.body, "assetKey": ORDERS, "dryRun": True}
    alias = api.call("PUT", "/aliases/ods", {"assetKeys": [ORDERS]}, query=dry)
    assert alias.status == 200 and alias.body["assetKeys"] == [ORDERS] and alias.body["dryRun"] is True
    rule = api.call("PUT", "/rules/dwd", RULE, query=dry)
    assert rule.status == 200 and rule.body["dryRun"] is True and rule.body["target"]["url"] == WEBHOOK["url"]
    watermark = {"namespace": "poller", "assetKey": ORDERS, "key": "offset", "value": 7, "expectedVersion": 0}
    wm = api.call("PUT", "/watermarks", watermark, query=dry)
    assert wm.status == 200 and wm.body["version"] == 1 and wm.body["dryRun"] is True

    # THEN nothing at all was written: no item, no secret
    assert (items(table), secrets(secrets_client)) == before
    assert api.call("GET", "/producers/ods-writer").status == 404
    assert api.call("GET", "/rules/dwd").status == 404
    assert api.call("GET", "/aliases/ods").status == 404

    # and a dry run refuses what the write would refuse
    assert api.call("PUT", "/assets", {"assetKey": ORDERS, "format": "parquet"}, query=dry).status == 400
    assert api.call("PUT", "/producers/bad id", {"assetKeyPrefixes": ["x"]}, query=dry).status == 400
    assert api.call("PUT", "/aliases/ods", {"assetKeys": ["nope"]}, query=dry).status == 400
    typo = {**RULE, "policy": {"mode": "ALL_UPDATE"}}
    assert api.call("PUT", "/rules/dwd", typo, query=dry).body["field"] == "policy.mode"
    assert api.call("PUT", "/watermarks", {**watermark, "value": float("nan")}, query=dry).status == 400
    assert (items(table), secrets(secrets_client)) == before

    # a real write, then a dry run of a stale compare-and-set is the 409 the write would be
    assert api.call("PUT", "/watermarks", watermark).status == 200
    stale = api.call("PUT", "/watermarks", watermark, query=dry)
    assert stale.status == 409, stale.body


def test_a_dry_run_of_an_existing_producer_never_rotates_or_shows_its_secret(api: Api, secrets_client: Any) -> None:
    secret = api.register("ods-writer", ["paimon://lake/ods_db/"])
    dry = api.call(
        "PUT",
        "/producers/ods-writer",
        {"assetKeyPrefixes": ["paimon://lake/"]},
        query={"dryRun": "true", "rotateSecret": "true"},
    )
    assert dry.status == 200 and "secret" not in dry.body and dry.body["assetKeyPrefixes"] == ["paimon://lake/"]
    ref = api.call("GET", "/producers/ods-writer").body
    assert ref["assetKeyPrefixes"] == ["paimon://lake/ods_db/"]
    assert ref["secretRef"] == "lakehook-producers/ods-writer"  # the producer secrets' own namespace
    assert secrets_client.get_secret_value(SecretId=ref["secretRef"])["SecretString"] == secret


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("GET", "/rules/has%20space", "ruleId"),
        ("PUT", "/rules/" + "r" * 65, "ruleId"),
        ("POST", "/rules/a%2Fb/evaluate", "ruleId"),
        ("GET", "/producers/caf%C3%A9", "producerId"),
        ("GET", "/aliases/a%3Bb", "name"),
        ("GET", "/triggers/k%24", "triggerKey"),
        ("POST", "/triggers/" + "k" * 201 + "/retry", "triggerKey"),
    ],
)
def test_a_malformed_path_parameter_is_a_400_naming_it_and_needs_credentials_first(
    api: Api, method: str, path: str, field: str, table: Any
) -> None:
    answer = api.call(method, path, RULE if method == "PUT" else None)
    assert answer.status == 400 and answer.body["field"] == field, answer.body
    assert items(table) == 0
    assert api.call(method, path, RULE if method == "PUT" else None, admin=False).status == 401
