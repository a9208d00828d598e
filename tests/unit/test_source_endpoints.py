"""The endpoints an asset source names (catalog ``uri``, ``s3.endpoint``, ``AWS_ENDPOINT_URL`` ...) follow the
targets' outbound URL policy: when the asset is written, and at poll time for what secret references resolve
to. Every DNS answer here is a stub; nothing is sent to any of these addresses."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.factory import snapshot_sources
from lakehook.adapters.targets.egress import AddressGuard
from lakehook.domain.assets import SECRET_REFERENCE_PREFIXES, AssetFormat, AssetSource
from lakehook.domain.errors import ValidationError
from lakehook.domain.source_endpoints import check_source_properties, is_endpoint_property
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.lakehouse import SourceAccessError
from tests.fakes.memory import InMemorySecretStore
from tests.hypothesis_profiles import examples

DEPLOYED = UrlPolicy()
LOCAL = UrlPolicy(local_mode=True)

# the endpoint properties pyiceberg, pypaimon, delta-rs / hudi-rs (and so lakehook's own readers) dial
ENDPOINT_NAMES = [
    "uri",
    "s3.endpoint",
    "glue.endpoint",
    "dynamodb.endpoint",
    "oauth2-server-uri",
    "s3.proxy-uri",
    "s3.signer.uri",
    "fs.s3.endpoint",
    "AWS_ENDPOINT_URL",
    "aws_endpoint",
    "endpoint_url",
    "endpoint",
    "aws_metadata_endpoint",
]
REFUSED = [
    "https://169.254.169.254",
    "http://169.254.169.254/latest/meta-data/",
    "https://[fd00:ec2::254]",
    "https://[::ffff:169.254.169.254]",
    "https://[::ffff:a9fe:a9fe]:443",
    "https://[::169.254.169.254]",
    "https://[2002:a9fe:a9fe::]",
    "https://[fe80::1%25eth0]",
    "https://169.254.170.2/v2/credentials",
    "https://metadata.google.internal",
    "https://user@catalog.example.com",  # credentials belong in a secret reference
    "https://[::1",  # malformed: never a 5xx
]


def check(properties: dict[str, str], policy: UrlPolicy = DEPLOYED) -> None:
    check_source_properties(properties, policy, SECRET_REFERENCE_PREFIXES)


@pytest.mark.parametrize("name", ENDPOINT_NAMES)
@pytest.mark.parametrize("url", REFUSED)
def test_a_refused_endpoint_is_a_400_naming_the_property(name: str, url: str) -> None:
    for policy in (DEPLOYED, LOCAL):
        with pytest.raises(ValidationError) as raised:
            check({"type": "rest", name: url}, policy)
        assert raised.value.field == f"source.properties.{name}"
        assert str(raised.value).startswith(f"source.properties.{name}: ")


@settings(max_examples=examples(200), deadline=None)
@given(
    name=st.text(alphabet="abcdefgh._-", max_size=12),
    address=st.sampled_from(["169.254.169.254", "169.254.0.1", "[fd00:ec2::254]", "[::ffff:a9fe:a9fe]"]),
)
def test_any_property_holding_a_web_url_is_checked_whatever_its_name(name: str, address: str) -> None:
    with pytest.raises(ValidationError):
        check({f"x{name}": f"https://{address}/"}, LOCAL)


def test_loopback_and_plain_http_only_in_local_mode() -> None:
    moto = {"s3.endpoint": "http://127.0.0.1:5000", "AWS_ENDPOINT_URL": "http://localhost:5000/"}
    check(moto, LOCAL)  # the local stack's moto
    with pytest.raises(ValidationError, match=r"source\.properties\.s3\.endpoint"):
        check(moto, DEPLOYED)
    with pytest.raises(ValidationError, match="plain http"):
        check({"uri": "http://catalog.example.com/"}, DEPLOYED)
    with pytest.raises(ValidationError, match="TargetAllowedNetworks"):
        check({"s3.endpoint": "https://10.20.0.5:9000"}, DEPLOYED)
    check({"s3.endpoint": "https://10.20.0.5:9000"}, UrlPolicy.of(False, ["10.20.0.0/16"]))  # allow-listed MinIO


def test_what_real_sources_use_is_accepted() -> None:
    check(
        {
            "type": "rest",
            "uri": "https://catalog.example.com/api/catalog",
            "s3.endpoint": "https://s3.eu-west-1.amazonaws.com",
            "glue.endpoint": "https://glue.eu-west-1.amazonaws.com",
            "warehouse": "s3://lake/warehouse",
            "s3.access-key-id": "secretsmanager:lake/s3#id",
            "token": "secretsmanager:lake/token",
        }
    )
    check({"type": "sql", "uri": "sqlite:////tmp/catalog.db", "warehouse": "file:///tmp/wh"})
    check({"uri": "postgresql+psycopg2://db.internal/catalog", "uri2": "thrift://hive:9083"})
    check({"hoodie.datasource.hive_sync.jdbcurl": "jdbc:hive2://hive:10000"})
    check({"security": "none", "s3.path-style-access": "true", "AWS_REGION": "us-east-1"})  # not endpoints


@pytest.mark.parametrize("value", ["169.254.169.254", "169.254.169.254:80", "s3.amazonaws.com", "[fd00:ec2::254]"])
def test_an_endpoint_without_a_scheme_is_refused_libraries_dial_it_over_plain_http(value: str) -> None:
    with pytest.raises(ValidationError, match="write the endpoint as a URL") as raised:
        check({"s3.endpoint": value}, LOCAL)
    assert raised.value.field == "source.properties.s3.endpoint"


def test_endpoint_names() -> None:
    assert all(is_endpoint_property(n) for n in [*ENDPOINT_NAMES, "gcs.service.host", "jdbcUrl"])
    assert not any(is_endpoint_property(n) for n in ("security", "warehouse", "type", "s3.region", "hosts_file"))


# --- at poll time ---------------------------------------------------------------------------------


def resolver(secret: str, policy: UrlPolicy | None, answers: dict[str, list[str]] | None = None) -> CredentialResolver:
    secrets = InMemorySecretStore()
    secrets.put_secret("lake/endpoint", secret)

    def dns(host: str, port: int) -> list[str]:
        if answers is None or host not in answers:
            raise socket.gaierror(f"{host} does not resolve")
        return answers[host]

    guard = AddressGuard(policy, dns).address_for if policy is not None else None
    return CredentialResolver(secrets, policy=policy, guard=guard)


def test_an_endpoint_a_secret_resolves_to_is_checked_before_any_client_is_built() -> None:
    properties = {"AWS_ENDPOINT_URL": "secretsmanager:lake/endpoint"}
    check(properties)  # a reference: unknown when written
    with pytest.raises(SourceAccessError, match=r"'AWS_ENDPOINT_URL'.*metadata"):
        resolver("https://[::ffff:169.254.169.254]/", LOCAL).resolve(properties)
    assert resolver("http://127.0.0.1:5000", LOCAL).resolve(properties).values == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5000"
    }


def test_an_endpoint_name_that_resolves_to_a_refused_address_is_refused_at_poll_time() -> None:
    properties = {"s3.endpoint": "https://minio.example.com:9000"}
    check(properties)  # fine as written
    rebinding = resolver("", DEPLOYED, {"minio.example.com": ["93.184.216.34", "169.254.169.254"]})
    with pytest.raises(SourceAccessError, match=r"'s3\.endpoint'.*169\.254\.169\.254"):
        rebinding.resolve(properties)
    public = resolver("", DEPLOYED, {"minio.example.com": ["93.184.216.34"]})
    assert public.resolve(properties).values == properties


def test_the_pollers_of_every_format_check_endpoints() -> None:
    secrets = InMemorySecretStore()
    secrets.put_secret("lake/endpoint", "https://169.254.169.254")
    sources = snapshot_sources(secrets, url_policy=DEPLOYED)
    endpoint = "secretsmanager:lake/endpoint"
    by_location = AssetSource(catalog="lake", location="s3://lake/orders", properties={"AWS_ENDPOINT_URL": endpoint})
    iceberg = AssetSource(catalog="lake", table="db.orders", properties={"type": "rest", "uri": endpoint})
    paimon = AssetSource(
        catalog="lake", table="db.orders", properties={"warehouse": "s3://lake/wh", "fs.s3.endpoint": endpoint}
    )
    for fmt, source in (
        (AssetFormat.DELTA, by_location),
        (AssetFormat.HUDI, by_location),
        (AssetFormat.ICEBERG, iceberg),
        (AssetFormat.PAIMON, paimon),
    ):
        with pytest.raises(SourceAccessError, match="metadata"):
            sources(fmt).pointer(source)


@settings(max_examples=examples(500), deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*ENDPOINT_NAMES, "warehouse", "type", "x"]),
        st.one_of(
            st.text(max_size=40),
            st.builds(
                lambda s, h: f"{s}://{h}", st.sampled_from(["http", "https", "HTTPS", "s3"]), st.text(max_size=30)
            ),
        ),
        max_size=4,
    )
)
def test_any_properties_are_taken_or_a_400_never_another_error(properties: dict[str, str]) -> None:
    for policy in (DEPLOYED, LOCAL):
        try:
            check(properties, policy)
        except ValidationError as exc:
            assert exc.field is not None and exc.field.startswith("source.properties.")


# --- the schemes a catalog or a file system dials besides http(s) ------------------------------------------------

DIALLED_REFUSED = [
    ("fs.s3.endpoint", "file:///etc"),  # Paimon's S3 endpoint as this machine's files
    ("uri", "thrift://169.254.169.254:9083"),  # a Hive metastore at the metadata service
    ("hive.metastore.uris", "thrift://metastore.example.com:9083,thrift://[::ffff:a9fe:a9fe]:9083"),
    ("uri", "postgresql+psycopg2://lake:pw@169.254.170.2/catalog"),
    ("hoodie.datasource.hive_sync.jdbcurl", "jdbc:mysql://[fd00:ec2::254]:3306/hive"),
    ("namenode", "hdfs://metadata.google.internal:8020/warehouse"),
    ("uri", "thrift://0.0.0.0:9083"),
    ("uri", "thrift://:9083"),  # no host
    ("uri", "thrift://hive:99999"),  # no port
]


@pytest.mark.parametrize(("name", "value"), DIALLED_REFUSED)
def test_a_url_of_any_scheme_a_catalog_dials_is_checked_and_refused_naming_the_property(name: str, value: str) -> None:
    for policy in (DEPLOYED, LOCAL):
        with pytest.raises(ValidationError, match="is refused") as raised:
            check({name: value}, policy)
        assert raised.value.field == f"source.properties.{name}"
        assert "pw" not in str(raised.value)  # the credentials of a URL are never shown


def test_a_private_or_loopback_metastore_needs_what_a_private_target_needs() -> None:
    private = {"uri": "thrift://10.20.0.7:9083"}
    with pytest.raises(ValidationError, match="TargetAllowedNetworks"):
        check(private, DEPLOYED)
    check(private, UrlPolicy.of(False, ["10.20.0.0/16"]))
    loopback = {"uri": "jdbc:hive2://localhost:10000/default"}
    with pytest.raises(ValidationError, match="loopback"):
        check(loopback, DEPLOYED)
    check(loopback, LOCAL)


def test_a_metastore_name_that_resolves_to_a_private_address_is_refused_at_poll_time() -> None:
    properties = {"uri": "thrift://metastore.example.com", "warehouse": "s3://lake/wh"}
    check(properties)  # a name: fine as written
    looked_up: list[tuple[str, int]] = []

    def dns(answers: list[str]) -> CredentialResolver:
        def lookup(host: str, port: int) -> list[str]:
            looked_up.append((host, port))
            return answers

        return CredentialResolver(
            InMemorySecretStore(), policy=DEPLOYED, guard=AddressGuard(DEPLOYED, lookup).address_for
        )

    with pytest.raises(SourceAccessError, match=r"'uri'.*10\.0\.0\.9"):
        dns(["10.0.0.9"]).resolve(properties)
    assert dns(["93.184.216.34"]).resolve(properties).values == properties
    assert looked_up == [("metastore.example.com", 9083)] * 2  # the metastore's port; the bucket is not looked up


@settings(max_examples=examples(200), deadline=None)
@given(
    name=st.text(alphabet="abcdefgh._-", max_size=12),
    scheme=st.sampled_from(["thrift", "hdfs", "postgresql+psycopg2", "jdbc:mysql", "jdbc:hive2", "mysql", "abfss"]),
    address=st.sampled_from(["169.254.169.254", "169.254.0.1", "[fd00:ec2::254]", "[::ffff:a9fe:a9fe]", "0.0.0.0"]),
)
def test_any_property_holding_a_dialled_url_is_checked_whatever_its_name_and_scheme(
    name: str, scheme: str, address: str
) -> None:
    with pytest.raises(ValidationError):
        check({f"x{name}": f"{scheme}://user@{address}:1234/db"}, LOCAL)
