"""The SecretStore contract (ports.store), on the fake and on Secrets Manager: a secret reads back by its
reference; a plain put creates or overwrites; an owned put creates a secret marked as its owner's, overwrites only
one carrying that mark and refuses (writing nothing) a secret someone else made; an overwrite keeps the former
value as the previous one; a missing secret is told apart."""

from __future__ import annotations

import pytest

from lakehook.domain.errors import ConflictError, NotFoundError
from tests.contracts.conftest import SecretBackend

pytestmark = pytest.mark.integration


def test_a_secret_reads_back_by_its_reference_and_a_put_overwrites(secret_backend: SecretBackend) -> None:
    store = secret_backend.store
    ref = store.put_secret("lakehook-targets/dwd", "first")

    assert store.get_secret(ref) == "first"
    assert store.secret_exists(ref) is True
    assert store.put_secret("lakehook-targets/dwd", "second") == ref
    assert store.get_secret(ref) == "second"


def test_a_missing_secret_is_not_found(secret_backend: SecretBackend) -> None:
    store = secret_backend.store
    with pytest.raises(NotFoundError):
        store.get_secret("lakehook-targets/absent")
    assert store.secret_exists("lakehook-targets/absent") is False
    assert store.get_previous_secret("lakehook-targets/absent") is None


def test_an_overwrite_keeps_the_former_value_as_the_previous_one(secret_backend: SecretBackend) -> None:
    store = secret_backend.store
    ref = store.put_secret("lakehook-targets/dwd", "first")
    assert store.get_previous_secret(ref) is None  # never overwritten

    store.put_secret(ref, "second")
    assert store.get_previous_secret(ref) == "first"
    store.put_secret(ref, "third")
    assert (store.get_secret(ref), store.get_previous_secret(ref)) == ("third", "second")


def test_an_owned_secret_is_overwritten_only_by_its_owner(secret_backend: SecretBackend) -> None:
    store = secret_backend.store
    name = "lakehook-producers/orders-writer"
    assert store.may_own_secret(name, "orders-writer") is True  # absent: anyone may create it

    ref = store.put_owned_secret(name, "k1", "orders-writer")
    assert store.get_secret(ref) == "k1"
    assert store.may_own_secret(name, "orders-writer") is True
    assert store.may_own_secret(name, "other-writer") is False
    with pytest.raises(ConflictError):
        store.put_owned_secret(name, "stolen", "other-writer")
    assert store.get_secret(ref) == "k1"

    assert store.put_owned_secret(name, "k2", "orders-writer") == ref  # a retry, or a rotation by its owner
    assert (store.get_secret(ref), store.get_previous_secret(ref)) == ("k2", "k1")


def test_a_secret_lakehook_did_not_create_is_never_taken_over(secret_backend: SecretBackend) -> None:
    store = secret_backend.store
    name = "lakehook-producers/orders-writer"
    secret_backend.create_foreign(name, "the operator's")

    assert store.may_own_secret(name, "orders-writer") is False
    with pytest.raises(ConflictError):
        store.put_owned_secret(name, "k1", "orders-writer")
    assert store.get_secret(name) == "the operator's"
    assert store.get_previous_secret(name) is None
    store.put_secret(name, "plain put")  # a plain put (a target secret by the CLI) does not mark it
    assert store.may_own_secret(name, "orders-writer") is False
