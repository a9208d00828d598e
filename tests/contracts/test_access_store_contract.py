"""The AccessStore contract, on the fake and on DynamoDB (moto, the table as template.yaml declares it): a token is
found by its id with its hash, role and scope, never stored twice under one id, listed in id order in pages and
revoked once; a binding keeps its creation time across a replace, is listed in principal order and deleted once."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from lakehook.adapters.dynamodb.access_store import DynamoDBAccessStore
from lakehook.domain.access import Grant, Role, RoleBinding, Scope, new_token, token_matches
from lakehook.domain.errors import ConflictError
from lakehook.ports.access import AccessStore
from tests.fakes.memory_access import InMemoryAccessStore
from tests.support import create_table

pytestmark = pytest.mark.integration

OPERATOR = Grant(Role.OPERATOR, Scope(("etl.",), ("iceberg://lake/sales",)))


@pytest.fixture(params=("memory", "dynamodb"))
def store(request: pytest.FixtureRequest) -> Iterator[AccessStore]:
    if request.param == "memory":
        yield InMemoryAccessStore()
        return
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "lakehook-access")
        yield DynamoDBAccessStore(boto3.resource("dynamodb", region_name="us-east-1").Table("lakehook-access"))


def test_a_token_is_found_by_id_and_matched_by_its_hash(store: AccessStore) -> None:
    token, stored = new_token(OPERATOR, "etl on-call", 1_000)
    store.put_token(stored)

    found = store.get_token(stored.token_id)
    assert found == stored
    assert found is not None and token_matches(found, token) and not token_matches(found, token + "x")
    with pytest.raises(ConflictError):
        store.put_token(stored)
    assert store.get_token("0" * 16) is None


def test_tokens_are_listed_in_id_order_in_pages_and_revoked_once(store: AccessStore) -> None:
    made = [new_token(Grant(Role.READ_ONLY), None, i)[1] for i in range(5)]
    for token in made:
        store.put_token(token)

    first = store.list_tokens(3)
    rest = store.list_tokens(3, first.next_token)
    assert [t.token_id for t in first.items + rest.items] == sorted(t.token_id for t in made)
    assert rest.next_token is None
    assert store.revoke_token(made[0].token_id) is True
    assert store.revoke_token(made[0].token_id) is False
    assert store.get_token(made[0].token_id) is None


def test_a_binding_keeps_its_creation_time_and_is_listed_by_principal(store: AccessStore) -> None:
    ops = "arn:aws:iam::123456789012:role/ops"
    admin = "arn:aws:iam::123456789012:role/admin"
    assert store.put_binding(RoleBinding(ops, Role.READ_ONLY, Scope(), None, 10)) is True
    assert store.put_binding(RoleBinding(ops, Role.OPERATOR, OPERATOR.scope, "on-call", 20)) is False
    assert store.put_binding(RoleBinding(admin, Role.ADMIN, Scope(), None, 30)) is True

    assert store.get_binding(ops) == RoleBinding(ops, Role.OPERATOR, OPERATOR.scope, "on-call", 10)
    assert [b.principal for b in store.list_bindings(10).items] == [admin, ops]
    assert store.delete_binding(ops) is True
    assert store.delete_binding(ops) is False
    assert store.get_binding(ops) is None
