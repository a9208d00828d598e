"""Every IAM role of the deployed stack is least privilege: no ``*`` action, no ``*`` resource but where AWS
requires one, each exception listed here with why.

The roles are read from template.yaml after the SAM transform (the SAM CLI's translator, run in .venv-sam),
so SAM's policy templates (``DynamoDBCrudPolicy``, ``SQSSendMessagePolicy`` …), the policies it adds for
dead-letter queues and event sources, and the managed policies it attaches are checked as deployed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.sam_template import deployed

# AWS managed policies a role may carry, with why. Their documents are AWS's, not in the template.
ALLOWED_MANAGED_POLICIES = {
    "AWSLambdaBasicExecutionRole": "SAM attaches it to every function: write its own logs (logs:* on '*', the "
    "log groups are the template's own)",
    "AWSXrayWriteOnlyAccess": "SAM attaches it while the Tracing parameter is on (PassThrough or Active): "
    "xray:PutTraceSegments and PutTelemetryRecords take no resource",
    "AWSLambdaDynamoDBExecutionRole": "SAM attaches it for a DynamoDB stream event source: read stream records "
    "(GetRecords, GetShardIterator, DescribeStream, ListStreams); read-only",
    "AWSLambdaSQSQueueExecutionRole": "SAM attaches it for an SQS event source: receive and delete the messages "
    "it is handed; nothing else",
    "AWSLambdaVPCAccessExecutionRole": "SAM attaches it to a function with VpcConfig (the four that reach "
    "TargetAllowedNetworks; attached even while ReachPrivateNetworks leaves them outside a VPC): create, describe "
    "and delete the function's own network interfaces, which EC2 authorizes on '*' only",
    "AmazonAPIGatewayPushToCloudWatchLogs": "API Gateway's account-wide logging role (SetApiGatewayAccountRole): "
    "one role serves every API of the account and region, so it cannot name our log groups",
}

# Actions ending in a wildcard that a statement may carry, with why (never a whole service: "svc:*").
ALLOWED_ACTION_WILDCARDS = {
    "sqs:SendMessage*": "SAM's SQSSendMessagePolicy template: SendMessage and SendMessageBatch on one named queue",
}

# Deny statements a role may carry, by Sid, with why (every other statement allows).
ALLOWED_DENIES = {
    "NoProducerSecrets": "a role that reads lakehook/<stack>/* (target or source secrets) never reads "
    "lakehook/<stack>/producers/*, where producers registered before their own namespace keep their secrets",
}

# Actions AWS authorizes only on Resource "*" (AWS Batch's ListJobs and DescribeJobs: the batch target's look-up
# before a retry and its run status; read-only).
ACTIONS_WITHOUT_RESOURCES = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "cloudwatch:PutMetricData",
    "batch:ListJobs",
    "batch:DescribeJobs",
}


def roles() -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in deployed()["Resources"].items() if v["Type"] == "AWS::IAM::Role"}


def branches(value: Any) -> Iterator[Any]:
    """Both outcomes of an Fn::If (a condition may be true on some stack), else the value itself."""
    if isinstance(value, dict) and set(value) == {"Fn::If"}:
        _, then, otherwise = value["Fn::If"]
        yield from branches(then)
        yield from branches(otherwise)
    elif not (isinstance(value, dict) and value.get("Ref") == "AWS::NoValue"):
        yield value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements() -> Iterator[tuple[str, dict[str, Any]]]:
    for role, properties in roles().items():
        for entry in properties.get("Policies", []):
            for policy in branches(entry):
                for statement in as_list(policy["PolicyDocument"]["Statement"]):
                    yield role, statement


def managed_policy_name(arn: Any) -> str:
    text = arn["Fn::Sub"] if isinstance(arn, dict) and "Fn::Sub" in arn else arn
    assert isinstance(text, str), f"a managed policy ARN the test cannot read: {arn!r}"
    return text.rsplit("/", 1)[-1]


def test_the_stack_has_a_role_per_function_and_the_api_gateway_logging_role() -> None:
    functions = [k for k, v in deployed()["Resources"].items() if v["Type"] == "AWS::Lambda::Function"]
    assert len(functions) >= 9
    assert {f"{name}Role" for name in functions} <= set(roles())
    assert "ApiGatewayCloudWatchRole" in roles()


def test_no_statement_allows_every_action_or_every_action_of_a_service() -> None:
    for role, statement in statements():
        if statement["Effect"] == "Deny":
            assert statement.get("Sid") in ALLOWED_DENIES, f"{role}: a Deny not listed with a reason: {statement}"
            continue
        assert statement["Effect"] == "Allow", (role, statement)
        for action in as_list(statement["Action"]):
            assert action != "*" and not action.endswith(":*"), (role, action)
            if "*" in action:
                assert action in ALLOWED_ACTION_WILDCARDS, f"{role}: {action} is not a listed wildcard"


def test_no_statement_allows_every_resource_unless_aws_requires_it() -> None:
    for role, statement in statements():
        for resource in as_list(statement["Resource"]):
            if resource == "*":
                actions = set(as_list(statement["Action"]))
                assert actions <= ACTIONS_WITHOUT_RESOURCES, f"{role}: {actions} on every resource"


def test_managed_policies_are_only_the_listed_ones() -> None:
    for role, properties in roles().items():
        for arn in properties.get("ManagedPolicyArns", []):
            name = managed_policy_name(arn)
            assert name in ALLOWED_MANAGED_POLICIES, f"{role} carries {name}, not listed with a reason"


def test_sam_policy_templates_expand_to_the_named_table_and_queues_only() -> None:
    # The SAM templates the functions use, as SAM expands them: every resource is the stack's own table
    # (and its indexes) or a queue named by GetAtt, never a pattern over the account.
    seen = 0
    for role, statement in statements():
        actions = as_list(statement["Action"])
        if any(a.startswith(("dynamodb:", "sqs:")) for a in actions):
            seen += 1
            for resource in as_list(statement["Resource"]):
                text = json.dumps(resource)
                assert "LakehookTable" in text or "Queue" in text, (role, resource)
    assert seen >= 9


def test_the_customer_managed_key_is_granted_only_when_one_is_given() -> None:
    for role, properties in roles().items():
        if role == "ApiGatewayCloudWatchRole":
            continue
        conditional = [p for p in properties.get("Policies", []) if "Fn::If" in p]
        kms = [p for p in conditional if p["Fn::If"][0] == "UseCustomerKey"]
        assert kms, f"{role} cannot use the KmsKeyArn key"
        # the only other conditions: the spool buckets (test_spool_buckets.py), EMR Serverless targets (below)
        assert {p["Fn::If"][0] for p in conditional} <= {
            "UseCustomerKey",
            "HasSpoolBuckets",
            "UseEmrServerlessTargets",
        }, role
        for entry in kms:
            condition, then, otherwise = entry["Fn::If"]
            assert condition == "UseCustomerKey" and otherwise == {"Ref": "AWS::NoValue"}
            (statement,) = then["PolicyDocument"]["Statement"]
            assert statement["Resource"] == {"Ref": "KmsKeyArn"}
            assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]


def _secret_resources(role: str, effect: str, action: str) -> list[str]:
    found = []
    for name, statement in statements():
        if name == role and statement["Effect"] == effect and action in as_list(statement["Action"]):
            for resource in as_list(statement["Resource"]):
                text = resource["Fn::Sub"] if isinstance(resource, dict) and "Fn::Sub" in resource else resource
                if isinstance(text, str) and ":secretsmanager:" in text:
                    found.append(text.split(":secret:", 1)[1])
    return found


def test_only_the_ingest_api_may_use_producer_signing_secrets() -> None:
    # Producer secrets live under lakehook-producers/<stack>/ (and, registered before that namespace, under
    # lakehook/<stack>/producers/): no poller, resolver or dispatcher may read them, so a target or an asset
    # source naming one could not send it anywhere even if the write-time check missed a spelling.
    producers = "lakehook-producers/${AWS::StackName}/*"
    legacy = "lakehook/${AWS::StackName}/producers/*"
    seen_ingest = False
    for role in roles():
        allowed = _secret_resources(role, "Allow", "secretsmanager:GetSecretValue")
        denied = _secret_resources(role, "Deny", "secretsmanager:GetSecretValue")
        if role == "IngestApiFunctionRole":
            seen_ingest = True
            assert producers in allowed and legacy in allowed
            assert "lakehook/${AWS::StackName}/*" not in allowed  # target secrets: it only checks they exist
            continue
        assert not any(r.startswith("lakehook-producers/") or r == "*" for r in allowed), (role, allowed)
        if "lakehook/${AWS::StackName}/*" in allowed:
            assert legacy in denied, f"{role} may read {legacy}"
    assert seen_ingest
    writes = {
        (role, action)
        for role in roles()
        for action in ("secretsmanager:CreateSecret", "secretsmanager:PutSecretValue")
        if _secret_resources(role, "Allow", action)
    }
    assert writes == {
        ("IngestApiFunctionRole", "secretsmanager:CreateSecret"),
        ("IngestApiFunctionRole", "secretsmanager:PutSecretValue"),
    }
    assert _secret_resources("IngestApiFunctionRole", "Allow", "secretsmanager:CreateSecret") == [producers]


def test_emr_serverless_targets_are_granted_only_on_the_named_application_passing_only_prefixed_roles() -> None:
    """The dispatcher and the trigger re-drive, and only while TargetEmrServerlessApplication is set: job runs of
    that application, and iam:PassRole of roles named TargetNamePrefix* to EMR Serverless alone."""
    granted = {}
    for role, properties in roles().items():
        for entry in properties.get("Policies", []):
            if isinstance(entry, dict) and "Fn::If" in entry and entry["Fn::If"][0] == "UseEmrServerlessTargets":
                _, then, otherwise = entry["Fn::If"]
                assert otherwise == {"Ref": "AWS::NoValue"}
                granted[role] = {s["Sid"]: s for s in then["PolicyDocument"]["Statement"]}
    assert sorted(granted) == ["DispatcherFunctionRole", "TriggerRedriveFunctionRole"]
    for found in granted.values():
        runs, roles_passed = found["EmrServerlessTargets"], found["EmrServerlessExecutionRoles"]
        resources = [r["Fn::Sub"] for r in runs["Resource"]]
        assert all("/applications/${TargetEmrServerlessApplication}" in r for r in resources)
        assert roles_passed["Action"] == ["iam:PassRole"]
        assert roles_passed["Resource"]["Fn::Sub"].endswith(":role/${TargetNamePrefix}*")
        assert roles_passed["Condition"] == {"StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}}
    statement_sids = {s.get("Sid") for _, s in statements()}
    assert "EmrServerlessTargets" in statement_sids  # and so checked by the least-privilege tests above
