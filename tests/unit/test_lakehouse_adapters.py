"""Credential references in source properties, and the factory's promise to load lakehouse libraries lazily."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import boto3
import pytest

from lakehook.adapters.lakehouse.credentials import CredentialResolver, ssm_parameter_reader
from lakehook.adapters.lakehouse.factory import snapshot_sources
from lakehook.domain.assets import AssetFormat
from lakehook.domain.errors import NotFoundError, ValidationError
from lakehook.domain.secret_names import ProducerSecrets
from lakehook.ports.lakehouse import SourceAccessError
from tests.fakes.memory import InMemorySecretStore


def resolver(parameters: dict[str, str] | None = None) -> CredentialResolver:
    secrets = InMemorySecretStore()
    secrets.put_secret("lake/s3", json.dumps({"id": "AKIAEXAMPLE", "secret": "s3cr3t-value"}))
    secrets.put_secret("lake/dsn", "postgresql://poller:pa55word@db/catalog")

    def read(name: str) -> str:
        if parameters is None or name not in parameters:
            raise NotFoundError(name)
        return parameters[name]

    return CredentialResolver(secrets, read)


def test_references_are_resolved_and_plain_values_kept() -> None:
    resolved = resolver({"/lake/token": "tok-123"}).resolve(
        {
            "s3.access-key-id": "secretsmanager:lake/s3#id",
            "s3.secret-access-key": "secretsmanager:lake/s3#secret",
            "uri": "secretsmanager:lake/dsn",
            "token": "ssm:/lake/token",
            "warehouse": "s3://bucket/wh",
        }
    )
    assert resolved.values == {
        "s3.access-key-id": "AKIAEXAMPLE",
        "s3.secret-access-key": "s3cr3t-value",
        "uri": "postgresql://poller:pa55word@db/catalog",
        "token": "tok-123",
        "warehouse": "s3://bucket/wh",
    }
    message = resolved.scrub("could not connect to postgresql://poller:pa55word@db/catalog with tok-123")
    assert "pa55word" not in message and "tok-123" not in message and "***" in message


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("secretsmanager:lake/absent", "secretsmanager:lake/absent does not exist"),
        ("secretsmanager:lake/s3#nope", "has no JSON field 'nope'"),
        ("secretsmanager:lake/dsn#id", "has no JSON field 'id'"),
        ("ssm:/lake/absent", "ssm:/lake/absent does not exist"),
    ],
)
def test_an_unresolvable_reference_names_itself_and_never_a_secret(value: str, said: str) -> None:
    with pytest.raises(SourceAccessError) as raised:
        resolver({}).resolve({"fs.s3.accessKeySecret": value})
    assert said in str(raised.value) and "fs.s3.accessKeySecret" in str(raised.value)
    assert "s3cr3t" not in str(raised.value) and "pa55word" not in str(raised.value)


def test_ssm_references_need_a_parameter_reader() -> None:
    with pytest.raises(SourceAccessError, match="SSM references are not configured"):
        CredentialResolver(InMemorySecretStore()).resolve({"token": "ssm:/x"})


def test_ssm_parameters_are_read_decrypted(aws: None) -> None:
    client: Any = boto3.client("ssm", region_name="us-east-1")
    client.put_parameter(Name="/lake/secret", Value="decrypted", Type="SecureString")
    read = ssm_parameter_reader(client)
    assert read("/lake/secret") == "decrypted"
    with pytest.raises(NotFoundError):
        read("/lake/missing")


def test_the_factory_has_no_source_for_custom_assets() -> None:
    with pytest.raises(ValidationError):
        snapshot_sources(InMemorySecretStore())(AssetFormat.CUSTOM)


def test_importing_the_factory_loads_no_lakehouse_library() -> None:
    code = (
        "import sys; import lakehook.adapters.lakehouse.factory, lakehook.usecases.poll; "
        "loaded = [m for m in ('pyiceberg', 'pypaimon', 'pyarrow') if m in sys.modules]; "
        "print(','.join(loaded))"
    )
    answer = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert answer.stdout.strip() == ""


@pytest.mark.parametrize(
    "value",
    [
        "secretsmanager:lakehook-producers/prod/orders-writer",
        "secretsmanager:/LAKEHOOK-PRODUCERS/prod/orders-writer#x",
        "secretsmanager:lakehook/prod/producers/orders-writer",
        "ssm:/aws/reference/secretsmanager/lakehook-producers/prod/orders-writer",
    ],
)
def test_a_stored_source_naming_a_producer_secret_is_never_handed_the_secret(value: str) -> None:
    # PUT /assets refuses such a source; one stored before that check reads as credentials that cannot be read
    secrets = InMemorySecretStore()
    for name in ("lakehook-producers/prod/orders-writer", "lakehook/prod/producers/orders-writer"):
        secrets.put_secret(name, "the producer's signing secret")
    parameters = {
        "/aws/reference/secretsmanager/lakehook-producers/prod/orders-writer": "the producer's signing secret"
    }
    reserved = ProducerSecrets.of("lakehook-producers/prod/", "lakehook/prod/")
    resolve = CredentialResolver(secrets, parameters.__getitem__, reserved).resolve
    with pytest.raises(SourceAccessError, match="is a producer signing secret") as raised:
        resolve({"token": value})
    assert "the producer's" not in str(raised.value)  # never the value
    secrets.put_secret("lakehook/prod/targets/s3", "an ordinary source secret")
    assert resolve({"token": "secretsmanager:lakehook/prod/targets/s3"}).values == {
        "token": "an ordinary source secret"
    }
