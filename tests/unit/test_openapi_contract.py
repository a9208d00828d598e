"""The OpenAPI document states, per operation, who may call it and every answer it gives."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate as validate_openapi

from lakehook.api.auth import ROUTE_AUTHENTICATORS
from lakehook.api.contract import LINEAGE, MANAGEMENT, PRODUCER, RUN_COMPLETION
from lakehook.cli_commands.api_docs import load_spec

ERROR_REF = "#/components/schemas/Error"


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    document = load_spec()
    validate_openapi(document)
    return document


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m.upper(), path, op) for path, ops in spec["paths"].items() for m, op in ops.items()]


def _schema(spec: dict[str, Any], ref_or_schema: dict[str, Any]) -> dict[str, Any]:
    ref = ref_or_schema.get("$ref")
    return spec["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else ref_or_schema


def test_security_schemes_name_the_headers_each_kind_of_caller_sends(spec: dict[str, Any]) -> None:
    schemes = spec["components"]["securitySchemes"]
    assert schemes["adminToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["adminToken"]["description"],
    }
    assert (schemes["sigv4"]["in"], schemes["sigv4"]["name"]) == ("header", "Authorization")
    assert schemes["sigv4"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    assert schemes["producerId"]["name"] == "X-Lakehook-Producer"
    assert schemes["producerSignature"]["name"] == "X-Lakehook-Signature"
    assert schemes["completionToken"]["name"] == "X-Lakehook-Completion-Token"
    assert (schemes["producerApiKey"]["type"], schemes["producerApiKey"]["scheme"]) == ("http", "bearer")


def test_every_operation_states_its_security(spec: dict[str, Any]) -> None:
    expected = {
        ("POST", "/asset-events"): PRODUCER,
        ("POST", "/runs/{triggerKey}/complete"): RUN_COMPLETION,
        ("POST", "/api/v1/lineage"): LINEAGE,
        ("GET", "/watermarks"): PRODUCER,  # a watcher's producer, confined to its watermarkNamespaces
        ("PUT", "/watermarks"): PRODUCER,
    }
    undocumented = {("GET", "/openapi.json")}  # public, and not an operation of the document
    assert set(expected) == set(ROUTE_AUTHENTICATORS) - undocumented, "the document and the authenticators disagree"
    for method, path, op in _operations(spec):
        assert op.get("security") == expected.get((method, path), MANAGEMENT), f"{method} {path}"


def test_lineage_takes_the_signed_form_and_the_bearer_key_is_an_opt_in_of_the_producer(spec: dict[str, Any]) -> None:
    security = spec["paths"]["/api/v1/lineage"]["post"]["security"]
    assert security[:2] == [{"producerId": [], "producerSignature": []}, {"producerApiKey": []}]
    assert "lineageBearer: true" in spec["components"]["securitySchemes"]["producerApiKey"]["description"]
    put = spec["paths"]["/producers/{producerId}"]["put"]
    body = _schema(spec, put["requestBody"]["content"]["application/json"]["schema"])
    assert body["properties"]["lineageBearer"]["type"] == "boolean"
    assert body["properties"]["lineageBearer"]["default"] is False
    answer = _schema(spec, put["responses"]["200"]["content"]["application/json"]["schema"])
    assert answer["properties"]["lineageBearer"]["type"] == "boolean"


def test_every_operation_lists_its_errors_with_the_error_schema(spec: dict[str, Any]) -> None:
    for method, path, op in _operations(spec):
        responses = op["responses"]
        assert "422" not in responses, f"{method} {path}: validation errors are answered 400"
        assert {"400", "401", "403"} <= set(responses), f"{method} {path}"
        if "requestBody" in op:
            assert {"413", "415"} <= set(responses), f"{method} {path}"
        if "{" in path and method in ("GET", "DELETE"):
            assert "404" in responses, f"{method} {path} reads one resource"
        for status, answer in responses.items():
            if status >= "400":
                assert answer["content"]["application/json"]["schema"] == {"$ref": ERROR_REF}, f"{method} {path}"
    error = spec["components"]["schemas"]["Error"]
    assert set(error["required"]) == {"error", "message"}


def test_answers_are_typed_objects_and_lists_are_typed_items(spec: dict[str, Any]) -> None:
    for method, path, op in _operations(spec):
        for status, answer in op["responses"].items():
            if status == "204":
                assert "content" not in answer
                continue
            schema = answer["content"]["application/json"]["schema"]
            variants = schema.get("anyOf", [schema])
            for variant in variants:
                body = _schema(spec, variant)
                assert body.get("type") == "object", f"{method} {path} {status} answers {schema}"
                items = body["properties"].get("items")
                if items is not None:
                    assert "$ref" in items["items"], f"{method} {path}: list items are typed"


def test_rule_body_is_the_full_rule_schema(spec: dict[str, Any]) -> None:
    body = spec["paths"]["/rules/{ruleId}"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    rule = _schema(spec, body)
    assert {"groups", "target"} <= set(rule["required"]) and "ruleId" not in rule["required"]
    assert rule.get("additionalProperties") is False
    group = _schema(spec, rule["properties"]["groups"]["items"])
    assert {"groupId", "members"} <= set(group["properties"])


def test_rule_target_is_a_union_discriminated_by_type(spec: dict[str, Any]) -> None:
    target = spec["components"]["schemas"]["Rule"]["properties"]["target"]
    assert target["discriminator"]["propertyName"] == "type"
    kinds = set(target["discriminator"]["mapping"])
    assert {"webhook", "stepfunctions", "lambda", "eventbridge", "airflow", "dolphinscheduler"} <= kinds
    for ref in target["discriminator"]["mapping"].values():
        assert _schema(spec, {"$ref": ref})["properties"]["type"], ref  # each variant resolves and names its type


@pytest.mark.parametrize(
    ("path", "status"), [("/triggers/{triggerKey}/replay", "201"), ("/rules/{ruleId}/evaluate", "200")]
)
def test_the_routes_that_start_runs_take_an_idempotency_key_and_say_when_they_answer_again(
    spec: dict[str, Any], path: str, status: str
) -> None:
    import re

    from lakehook.domain.requests import IDEMPOTENCY_KEY_PATTERN

    op = spec["paths"][path]["post"]
    (header,) = [p for p in op["parameters"] if p["in"] == "header"]
    assert header["name"].lower() == "idempotency-key" and header.get("required") is False
    assert header["schema"]["pattern"] == IDEMPOTENCY_KEY_PATTERN
    assert re.fullmatch(header["schema"]["pattern"], "0b7c5a52-2f1e-4a4e-9d55-3c2f7f1d9e10")
    assert "409" in op["responses"] and "IDEMPOTENCY_KEY_REUSED" in op["description"]
    assert set(op["responses"][status]["headers"]) == {"Idempotent-Replayed"}
    # only those: no other operation records requests
    others = [(m, p) for m, p, o in _operations(spec) if any(q["in"] == "header" for q in o.get("parameters", []))]
    assert sorted(others) == [("POST", "/rules/{ruleId}/evaluate"), ("POST", "/triggers/{triggerKey}/replay")]


def test_explain_states_a_scheduled_groups_ticks_and_what_its_next_run_waits_for(spec: dict[str, Any]) -> None:
    ok = spec["paths"]["/rules/{ruleId}/explain"]["get"]["responses"]["200"]["content"]["application/json"]
    group = _schema(spec, _schema(spec, ok["schema"])["properties"]["groups"]["items"])
    schedule = _schema(spec, next(v for v in group["properties"]["schedule"]["anyOf"] if "$ref" in v))
    assert {"cron", "timezone", "neverFires", "lastTick", "nextTick", "pendingTick", "waitsFor", "reason"} <= set(
        schedule["required"]
    )
    tick = _schema(spec, next(v for v in schedule["properties"]["nextTick"]["anyOf"] if "$ref" in v))
    assert set(tick["required"]) == {"utc", "local"}
    waits = next(v for v in schedule["properties"]["waitsFor"]["anyOf"] if v.get("type") == "array")
    assert {"assetKey", "status", "reason"} <= set(_schema(spec, waits["items"])["properties"])


def _object(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The object schema of a value that may be null (``anyOf`` an object, or a ref to one, and null)."""
    variants = schema.get("anyOf", [schema])
    (found,) = [v for v in variants if v.get("type") != "null"]
    return _schema(spec, found)


def test_the_trigger_answers_and_explains_newest_trigger_name_the_partition_a_run_was_for(
    spec: dict[str, Any],
) -> None:
    def ok(path: str) -> dict[str, Any]:
        return _schema(spec, spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"])

    one, page = ok("/triggers/{triggerKey}"), ok("/triggers")
    assert "partition" in one["properties"] and _schema(spec, page["properties"]["items"]["items"]) == one
    explanation = ok("/rules/{ruleId}/explain")
    group = _schema(spec, explanation["properties"]["groups"]["items"])
    for answer in (explanation, group):  # the rule's newest trigger, and each group's
        assert "lastTrigger" in answer["properties"], sorted(answer["properties"])
        newest = _object(spec, answer["properties"]["lastTrigger"])
        fields = newest.get("properties", {})
        assert {"triggerKey", "groupId", "status", "createdAt", "inputs", "window", "partition"} <= set(fields), newest
        assert fields["partition"].get("description"), fields["partition"]
