"""Roles through the API on fakes: scoped tokens (made once, stored as a hash, revoked at once), an OPERATOR's
runs in and out of its scope, what GET /me says, and IAM identities by their role bindings and the stack's
UnboundIamIdentity policy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lakehook import container
from lakehook.api.app import build_app
from lakehook.domain.access import caller_principal
from lakehook.settings import Settings
from tests import wiring
from tests.fakes.memory_access import InMemoryAccessStore
from tests.support import FakeLambdaContext, api_event
from tests.unit.roles_stack import ETL_RULE, MART_RULE, ODS, SALES, TARGET, RolesStack

ACCOUNT = "123456789012"
OPS_ROLE = f"arn:aws:iam::{ACCOUNT}:role/ops"
DRY_RUN = {"dryRun": "true"}
ADMIN_ROLE = f"arn:aws:iam::{ACCOUNT}:role/platform"


@pytest.fixture
def stack() -> Iterator[RolesStack]:
    made = RolesStack()
    yield made
    made.close()


def test_a_token_is_answered_once_and_only_its_hash_is_stored(stack: RolesStack) -> None:
    created = stack.ok("POST", "/tokens", {"role": "OPERATOR", "rules": ["etl."], "description": "etl on-call"})
    store = stack.container.access_store
    assert isinstance(store, InMemoryAccessStore)

    stored = store.tokens[created["tokenId"]]
    assert created["token"] not in repr(stored) and created["token"] not in json.dumps(stack.ok("GET", "/tokens"))
    assert stack.ok("GET", "/me", token=created["token"]) == {
        "role": "OPERATOR",
        "scope": {"rules": ["etl."], "assets": []},
        "source": f"token {created['tokenId']}",
        "allowedActions": ["READ", "OPERATE"],
    }


def test_a_revoked_or_altered_token_is_a_401(stack: RolesStack) -> None:
    token = stack.token("READ_ONLY")
    token_id = token.split("_")[1]
    altered = token[:-1] + ("A" if token[-1] != "A" else "B")

    assert stack.call("GET", "/rules", token=altered)[0] == 401
    assert stack.call("DELETE", f"/tokens/{token_id}")[0] == 204
    assert stack.call("GET", "/rules", token=token)[0] == 401
    assert stack.call("DELETE", f"/tokens/{token_id}")[0] == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "OWNER"}, "role"),
        ({"rules": ["etl."]}, "role"),
        ({"role": "ADMIN", "rules": ["etl."]}, None),
        ({"role": "OPERATOR", "rules": "etl."}, "rules"),
        ({"role": "OPERATOR", "assets": [""]}, "assets"),
        ({"role": "OPERATOR", "scope": {}}, "scope"),
    ],
)
def test_a_bad_token_request_is_a_400_naming_what_is_wrong(stack: RolesStack, body: Any, field: str | None) -> None:
    status, answer = stack.call("POST", "/tokens", body)
    assert status == 400, answer
    assert answer.get("field") == field, answer


def test_an_operator_replays_and_evaluates_in_its_scope_only(stack: RolesStack) -> None:
    token = stack.token("OPERATOR", ["etl."], ["iceberg://lake/sales"])

    replayed = stack.call("POST", f"/triggers/{stack.triggers[ETL_RULE]}/replay", token=token, query=DRY_RUN)
    refused = stack.call("POST", f"/triggers/{stack.triggers[MART_RULE]}/replay", token=token, query=DRY_RUN)
    hourly = {"groups": [{"groupId": "g", "members": [{"assetKey": SALES}]}], "target": TARGET, "enabled": False}
    stack.ok("PUT", "/rules/etl.hourly", hourly)
    forced = stack.call("POST", "/rules/etl.hourly/evaluate", {"force": True}, token=token)
    rule_write = stack.call("PUT", f"/rules/{ETL_RULE}", {"groups": []}, token=token)

    # past the roles: the replay's own pre-flight answers (the trigger was never dispatched, so no manifest yet)
    assert replayed[0] == 409 and replayed[1]["error"] == "CONFLICT" and "run manifest" in replayed[1]["message"]
    assert forced[0] == 200, forced
    assert refused[0] == 403
    assert refused[1]["message"] == (
        "role OPERATOR (scope: rules [etl.], assets [iceberg://lake/sales], from token "
        f"{token.split('_')[1]}) may not POST /triggers/{{triggerKey}}/replay of rule 'mart.sales', outside its rule "
        "prefixes"
    )
    assert rule_write[0] == 403 and "may not PUT /rules/{ruleId}" in rule_write[1]["message"]
    assert stack.call("GET", "/assets/state", token=token, query={"assetKey": SALES})[0] == 200
    assert stack.call("GET", "/assets/state", token=token, query={"assetKey": ODS})[0] == 403


def test_what_a_body_names_is_held_to_the_scope_too(stack: RolesStack) -> None:
    token = stack.token("OPERATOR", ["etl."], ["iceberg://lake/sales"])
    group = {"members": [{"assetKey": ODS}]}

    assert stack.call("POST", "/sensors/evaluate", {"ruleId": MART_RULE}, token=token)[0] == 403
    assert stack.call("POST", "/sensors/evaluate", {"ruleId": ETL_RULE}, token=token)[0] == 200
    assert stack.call("POST", "/sensors/evaluate", {"group": group}, token=token)[0] == 403
    assert stack.call("POST", f"/rules/{ETL_RULE}/backtest", {"rule": {}}, token=token)[0] == 403


def test_an_operator_completes_a_run_only_with_the_outlets_the_rule_declares(stack: RolesStack) -> None:
    """An OPERATOR operates runs; it does not push events: its completion's outlets are held to the rule's
    declared outlets, as the run's own completion token is, so it cannot write an asset outside its scope (and
    start another rule's run) by naming it as an outlet."""
    token = stack.token("OPERATOR", ["etl."], ["iceberg://lake/sales"])
    outlet = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ODS, "snapshotId": 2, "commitTime": 1_750_000_001_000}

    status, answer = stack.call(
        "POST", f"/runs/{stack.triggers[ETL_RULE]}/complete", {"status": "SUCCEEDED", "outlets": [outlet]}, token=token
    )

    assert status == 403, answer
    assert "outside the outlets rule 'etl.daily' declares" in answer["message"]
    assert stack.ok("GET", "/assets/state", query={"assetKey": ODS})["latestSnapshotId"] == 1


# --- IAM identities ------------------------------------------------------------------------------------


class IamStack:
    """A deployed stack's API on fakes: no admin token, API Gateway's verified identity in the request."""

    def __init__(self, unbound: str) -> None:
        self.container = wiring.in_memory(Settings(unbound_iam_identity=unbound))
        container.use(self.container)
        self.app = build_app()

    def call(self, arn: str, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        event = api_event(method, path, body, headers={"Content-Type": "application/json"}, query=query)
        event["requestContext"]["identity"] = {"userArn": arn, "caller": "AROAEXAMPLE:session"}
        answer = self.app.resolve(event, FakeLambdaContext())
        return int(answer["statusCode"]), json.loads(answer["body"]) if answer["body"] else None


def _session(role_arn: str, session: str = "alice") -> str:
    return role_arn.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/") + f"/{session}"


@pytest.fixture
def iam() -> Iterator[IamStack]:
    made = IamStack("AUTO")
    yield made
    container.use(None)


def test_auto_keeps_every_identity_admin_until_the_first_binding(iam: IamStack) -> None:
    assert iam.call(_session(OPS_ROLE), "GET", "/me")[1]["role"] == "ADMIN"
    first = iam.call(_session(ADMIN_ROLE), "PUT", "/role-bindings", {"principalArn": OPS_ROLE, "role": "READ_ONLY"})
    assert first[0] == 409 and "bind an ADMIN first" in first[1]["message"]

    admin = {"principalArn": "arn:aws:iam::123456789012:role/team/platform", "role": "ADMIN"}
    assert iam.call(_session(ADMIN_ROLE), "PUT", "/role-bindings", admin)[0] == 201
    ops = {"principalArn": OPS_ROLE, "role": "OPERATOR", "rules": ["etl."]}
    assert iam.call(_session(ADMIN_ROLE), "PUT", "/role-bindings", ops)[0] == 201

    assert iam.call(_session(OPS_ROLE, "bob"), "GET", "/me")[1]["scope"] == {"rules": ["etl."], "assets": []}
    assert iam.call(_session(ADMIN_ROLE), "GET", "/me")[1]["role"] == "ADMIN"  # the path-less role ARN matched
    refused = iam.call(_session(f"arn:aws:iam::{ACCOUNT}:role/other"), "GET", "/rules")
    assert refused[0] == 403 and "has no role binding" in refused[1]["message"]


def test_the_last_admin_binding_is_neither_deleted_nor_downgraded_while_other_bindings_remain(iam: IamStack) -> None:
    """Under AUTO every unbound identity is refused once a binding exists: deleting or downgrading the only ADMIN
    binding while an OPERATOR's remains would leave nobody able to administer the stack through the API."""
    admin = {"principalArn": ADMIN_ROLE, "role": "ADMIN"}
    assert iam.call(_session(ADMIN_ROLE), "PUT", "/role-bindings", admin)[0] == 201
    ops = {"principalArn": OPS_ROLE, "role": "OPERATOR", "rules": ["etl."]}
    assert iam.call(_session(ADMIN_ROLE), "PUT", "/role-bindings", ops)[0] == 201

    downgraded = iam.call(_session(ADMIN_ROLE), "PUT", "/role-bindings", {**admin, "role": "READ_ONLY"})
    deleted = iam.call(_session(ADMIN_ROLE), "DELETE", "/role-bindings", query={"principalArn": ADMIN_ROLE})

    assert downgraded[0] == 409 and "no ADMIN binding" in downgraded[1]["message"], downgraded
    assert deleted[0] == 409 and "no ADMIN binding" in deleted[1]["message"], deleted
    assert iam.call(_session(ADMIN_ROLE), "GET", "/me")[1]["role"] == "ADMIN"
    # with the other binding gone first, the last one may go: the stack is back to AUTO's every-identity ADMIN
    assert iam.call(_session(ADMIN_ROLE), "DELETE", "/role-bindings", query={"principalArn": OPS_ROLE})[0] == 204
    assert iam.call(_session(ADMIN_ROLE), "DELETE", "/role-bindings", query={"principalArn": ADMIN_ROLE})[0] == 204
    assert iam.call(_session(OPS_ROLE), "GET", "/me")[1]["role"] == "ADMIN"


@pytest.mark.parametrize(("policy", "status"), [("ADMIN", 200), ("READ_ONLY", 200), ("DENY", 403)])
def test_the_unbound_policy_decides_an_unbound_identity(policy: str, status: int) -> None:
    stack = IamStack(policy)
    try:
        assert stack.call(_session(OPS_ROLE), "GET", "/rules")[0] == status
        write = stack.call(_session(OPS_ROLE), "DELETE", "/rules/x")[0]
        assert write == {"ADMIN": 404, "READ_ONLY": 403, "DENY": 403}[policy]
    finally:
        container.use(None)


@pytest.mark.parametrize(
    ("arn", "principal"),
    [
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/ops/alice@example.com", OPS_ROLE),
        (f"arn:aws:iam::{ACCOUNT}:user/deploy/ci", f"arn:aws:iam::{ACCOUNT}:user/ci"),
        (f"arn:aws-cn:iam::{ACCOUNT}:role/ops", f"arn:aws-cn:iam::{ACCOUNT}:role/ops"),
        (f"arn:aws:sts::{ACCOUNT}:federated-user/bob", None),
        ("not an arn", None),
    ],
)
def test_an_identity_is_matched_by_its_user_or_role(arn: str, principal: str | None) -> None:
    assert caller_principal(arn) == principal


def test_a_binding_of_something_that_is_not_a_user_or_role_is_a_400(iam: IamStack) -> None:
    status, answer = iam.call(
        OPS_ROLE, "PUT", "/role-bindings", {"principalArn": "arn:aws:s3:::bucket", "role": "ADMIN"}
    )
    assert status == 400 and answer["field"] == "principalArn"
